-- expect: tests/plans/dp_comm_fp32_plan.lua:4: plan.dp_comm: "bf16" under precision = "fp32": data-parallel sums carry fp32 or the plan's 16-bit type (valid: "fp32")
-- An fp32 plan's gradients are not bf16 values: packing them would round them (with ZeRO as without).
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp32", dp_comm = "bf16", zero = 1,
}
