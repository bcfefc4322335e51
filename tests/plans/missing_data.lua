-- expect: tests/plans/missing_data.lua:4: plan.data: is required (valid: { train = "data/train.bin" })
-- A plan without training data.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
}
