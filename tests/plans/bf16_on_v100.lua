-- expect: tests/plans/bf16_on_v100.lua:4: plan.precision: "bf16" on a V100, which has no bf16 arithmetic (its bf16 peak is 0) (valid: "fp32" or "fp16")
-- A V100 has no bf16 arithmetic.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.V100 },
  mesh = { dp = 2 },
  precision = "bf16",
  batch = { micro = 4, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
