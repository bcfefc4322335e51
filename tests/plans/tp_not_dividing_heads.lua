-- expect: tests/plans/tp_not_dividing_heads.lua:4: mesh.tp: 3 does not divide heads = 4 (valid: a divisor of 4: 1, 2, 4)
-- Tensor parallelism splits attention heads across ranks.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 3, device = w.gpu.CPU },
  mesh = { tp = 3 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
