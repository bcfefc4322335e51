-- expect: tests/plans/heads_not_dividing.lua:5: gpt2.heads: 5 does not divide hidden = 64 (valid: a divisor of 64: 1, 2, 4, 8, 16, 32, 64)
-- Attention heads must split the hidden width evenly.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 5, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
