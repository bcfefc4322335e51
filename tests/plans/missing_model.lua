-- expect: tests/plans/missing_model.lua:4: plan.model: is required (valid: weft.gpt2 { ... })
-- A plan without a model.
local w = weft
return w.plan {
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
