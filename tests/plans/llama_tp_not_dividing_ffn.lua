-- expect: tests/plans/llama_tp_not_dividing_ffn.lua:4: mesh.tp: 2 does not divide ffn_hidden = 175 (valid: a divisor of 175: 1, 5, 7, 25, 35, 175)
-- The SwiGLU gate and up projections are split by columns across tp ranks.
local w = weft
return w.plan {
  model = w.llama { layers = 2, hidden = 64, heads = 4, kv_heads = 2, ffn_hidden = 175, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.CPU },
  mesh = { tp = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
