-- expect: tests/plans/unknown_field_train.lua:4: train.step: unknown field (did you mean 'steps'?) (valid: ckpt_every, log_every, seed, steps)
-- A misspelt field in the nested train table.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  train = { step = 300 },
  data = { train = "data/synth.bin" },
}
