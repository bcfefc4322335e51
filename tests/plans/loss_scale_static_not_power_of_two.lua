-- expect: tests/plans/loss_scale_static_not_power_of_two.lua:4: plan.loss_scale: 3 is not a power of two (scaling by one is exact) (valid: 1, 2, 4, ..., 65536, ...)
-- A static scale, not a power of two.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp16", loss_scale = 3,
}
