-- expect: tests/plans/dp_comm_other_type.lua:4: plan.dp_comm: "fp16" under precision = "bf16": data-parallel sums carry fp32 or the plan's 16-bit type (valid: "fp32", "bf16")
-- Gradient sums travel in fp32 or in the plan's own 16-bit type.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "bf16", dp_comm = "fp16",
}
