-- expect: tests/plans/fault_timeout_zero.lua:4: fault.timeout_s: 0 is below the minimum 0.1 (valid: 0.1 .. 1000000)
-- A watchdog timeout of 0 s would end every job at its first wait.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  fault = { timeout_s = 0 },
  data = { train = "data/synth.bin" },
}
