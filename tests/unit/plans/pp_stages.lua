-- pp_stages.lua: tiny's model on two pipeline stages cut by hand, 3 blocks
-- then 1 (tests/unit/test_passes_partition.c).
local w = weft

return w.plan {
  name = "pp_stages",
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 32, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.CPU },
  mesh = { dp = 1, pp = 2 },
  pipeline = { schedule = "1f1b", stages = { 3, 1 } },
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 1e-3 },
  data = { train = "data/synth.bin" },
}
