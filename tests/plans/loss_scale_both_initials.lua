-- expect: tests/plans/loss_scale_both_initials.lua:4: loss_scale.initial_scale_power: given together with loss_scale.initial (valid: one of the two)
-- Two ways to give the initial scale at once.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp16", loss_scale = { initial = 1024, initial_scale_power = 10 },
}
