-- expect: tests/plans/unknown_field_llama.lua:5: llama.kv_head: unknown field (did you mean 'kv_heads'?) (valid: ffn_hidden, heads, hidden, init_std, kv_heads, layers, mlp_gate, norm, norm_eps, rope_theta, seq, vocab)
-- A misspelt field is named with the closest valid one.
local w = weft
return w.plan {
  model = w.llama { layers = 2, hidden = 64, heads = 4, kv_head = 2, ffn_hidden = 176, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
