-- expect: tests/plans/loss_scale_bf16.lua:4: plan.loss_scale: is for precision = "fp16" only; bf16 needs no loss scaling (valid: leave loss_scale out, or precision = "fp16")
-- bf16 has fp32's range: loss scaling is refused.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "bf16", loss_scale = { initial = 1024 },
}
