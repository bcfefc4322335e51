-- expect: tests/plans/returns_model.lua:4: the plan must end with `return weft.plan { ... }`
-- A plan that returns a model instead of a plan.
local w = weft
return w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 }
