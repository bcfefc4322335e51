-- expect: tests/plans/fault_unknown_field.lua:4: fault.timeout: unknown field (did you mean 'timeout_s'?) (valid: timeout_s)
-- A misspelt field of the fault table.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  fault = { timeout = 300 },
  data = { train = "data/synth.bin" },
}
