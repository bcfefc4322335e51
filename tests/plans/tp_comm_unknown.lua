-- expect: tests/plans/tp_comm_unknown.lua:4: plan.tp_comm: "int8" is not a known value (valid: auto, fp32, bf16, fp16)
-- A tensor-parallel message dtype weft does not send.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "bf16", tp_comm = "int8",
}
