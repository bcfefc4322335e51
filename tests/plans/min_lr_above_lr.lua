-- expect: tests/plans/min_lr_above_lr.lua:7: adamw.min_lr: 0.001 exceeds lr = 0.0003 (valid: 0 .. 0.0003)
-- The schedule decays from lr to min_lr: min_lr cannot be the larger.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-4, min_lr = 1e-3 },
  data = { train = "data/synth.bin" },
}
