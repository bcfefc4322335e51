-- expect: tests/plans/tp_unsupported.lua:4: mesh.tp: 2 is not supported yet by this version of weft (valid: 1)
-- Tensor parallelism is planned, not implemented: say so rather than compile something wrong.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.CPU },
  mesh = { tp = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
