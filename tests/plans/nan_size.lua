-- expect: tests/plans/nan_size.lua:5: gpt2.heads: expected an integer, got number nan (valid: an integer in 1 .. 1024)
-- NaN compares false with everything, so range checks alone would let it through.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 0 / 0, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
