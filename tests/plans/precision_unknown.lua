-- expect: tests/plans/precision_unknown.lua:4: plan.precision: "fp8" is not a known value (valid: fp32, bf16, fp16)
-- An unknown precision.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp8",
}
