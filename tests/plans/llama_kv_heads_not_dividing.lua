-- expect: tests/plans/llama_kv_heads_not_dividing.lua:5: llama.kv_heads: 3 does not divide heads = 4 (valid: a divisor of 4: 1, 2, 4)
-- Grouped-query attention: each key/value head serves heads / kv_heads query heads.
local w = weft
return w.plan {
  model = w.llama { layers = 2, hidden = 64, heads = 4, kv_heads = 3, ffn_hidden = 176, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
