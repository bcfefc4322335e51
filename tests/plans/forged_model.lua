-- expect: tests/plans/forged_model.lua:4: plan.model: expected a model made by weft.gpt2 { ... }, weft.llama { ... } or weft.vlm { ... }, got a table marked __kind = "model" that weft did not make (valid: weft.gpt2 { ... }, weft.llama { ... } or weft.vlm { ... })
-- A hand-made table marked as a model would skip the gpt2 checks (heads = 0 divides nothing).
local w = weft
return w.plan {
  model = { __kind = "model", family = "gpt2", layers = 2, hidden = 64, heads = 0, seq = 64,
            vocab = 256, graph = { params = {}, ops = {} } },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
