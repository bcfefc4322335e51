-- expect: tests/plans/unknown_field_data.lua:4: data.trian: unknown field (did you mean 'train'?) (valid: train)
-- A misspelt field in the nested data table.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { trian = "data/synth.bin" },
}
