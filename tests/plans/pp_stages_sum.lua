-- expect: tests/plans/pp_stages_sum.lua:4: pipeline.stages: layer counts sum to 5, the model has 4 (valid: 2 counts summing to 4)
-- An explicit partition must place every layer exactly once.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  pipeline = { schedule = "1f1b", stages = { 2, 3 } },
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
