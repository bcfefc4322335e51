-- expect: tests/plans/dp_comm_zero.lua:4: plan.dp_comm: "bf16" with zero = 1 is not supported yet by this version of weft (ZeRO's reduce-scatters carry fp32) (valid: "fp32", or zero = 0)
-- ZeRO reduces gradients by reduce-scatter, in fp32 only for now.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "bf16", dp_comm = "bf16", zero = 1,
}
