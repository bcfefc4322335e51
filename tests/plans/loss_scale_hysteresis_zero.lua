-- expect: tests/plans/loss_scale_hysteresis_zero.lua:4: loss_scale.hysteresis: 0 is below the minimum 1 (valid: 1 .. 1048576)
-- Hysteresis counts overflows tolerated: at least 1.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp16", loss_scale = { hysteresis = 0 },
}
