-- expect: tests/plans/zero_prefetch_negative.lua:4: plan.zero_prefetch: -1 is below the minimum 0
-- How many all-gathers ZeRO-3 starts ahead of use: 0 (none) or more.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2 },
  zero = 3,
  zero_prefetch = -1,
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
