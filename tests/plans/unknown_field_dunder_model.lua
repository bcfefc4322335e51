-- expect: tests/plans/unknown_field_dunder_model.lua:5: gpt2.__layers: unknown field
-- A "__" field inside a constructor's table.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256, __layers = 4 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
