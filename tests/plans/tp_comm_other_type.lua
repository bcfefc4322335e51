-- expect: tests/plans/tp_comm_other_type.lua:4: plan.tp_comm: "fp16" under precision = "bf16": tensor-parallel messages carry the activations' dtype or fp32 (valid: "auto", "fp32", "bf16")
-- 16-bit messages of another type than the activations'.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "bf16", tp_comm = "fp16",
}
