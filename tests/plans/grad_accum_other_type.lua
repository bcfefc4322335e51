-- expect: tests/plans/grad_accum_other_type.lua:4: plan.grad_accum: "bf16" under precision = "fp16": weight gradients accumulate in the plan's dtype or in fp32 (valid: "auto", "fp32", "fp16")
-- Weight gradients accumulated in another 16-bit type than the plan's.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "fp16", grad_accum = "bf16",
}
