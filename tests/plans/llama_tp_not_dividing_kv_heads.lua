-- expect: tests/plans/llama_tp_not_dividing_kv_heads.lua:4: mesh.tp: 4 does not divide kv_heads = 2 (valid: a divisor of 2: 1, 2)
-- Tensor parallelism splits the key/value heads too: tp 4 divides the 8 query heads, not the 2 kv heads.
local w = weft
return w.plan {
  model = w.llama { layers = 2, hidden = 64, heads = 8, kv_heads = 2, ffn_hidden = 176, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 4, device = w.gpu.CPU },
  mesh = { tp = 4 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
