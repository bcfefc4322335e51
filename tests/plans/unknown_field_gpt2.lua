-- expect: tests/plans/unknown_field_gpt2.lua:5: gpt2.layer: unknown field (did you mean 'layers'?) (valid: activation, heads, hidden, init_std, layers, seq, vocab)
-- A misspelt model field; the line is that of the weft.gpt2 call.
local w = weft
return w.plan {
  model = w.gpt2 { layer = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
