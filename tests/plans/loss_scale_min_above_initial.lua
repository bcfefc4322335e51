-- expect: tests/plans/loss_scale_min_above_initial.lua:4: loss_scale.min: 32 is above the initial scale 16 (valid: a power of two <= 16)
-- The floor of the dynamic scale above where it starts.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp16", loss_scale = { initial_scale_power = 4, min = 32 },
}
