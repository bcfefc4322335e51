-- expect: tests/plans/loss_scale_unknown_field.lua:4: loss_scale.windw: unknown field (did you mean 'window'?) (valid: hysteresis, initial, initial_scale_power, min, window)
-- A misspelt loss-scaler field.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp16", loss_scale = { windw = 100 },
}
