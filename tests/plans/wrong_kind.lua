-- expect: tests/plans/wrong_kind.lua:4: plan.model: expected a model made by weft.gpt2 { ... }, weft.llama { ... } or weft.vlm { ... }, got an optimizer (valid: weft.gpt2 { ... }, weft.llama { ... } or weft.vlm { ... })
-- An optimizer where the model belongs.
local w = weft
return w.plan {
  model = w.adamw { lr = 3e-3 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
