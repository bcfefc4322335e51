-- expect: tests/plans/absurd_float_size.lua:5: gpt2.seq: 1e+300 is above the maximum 131072 (valid: 1 .. 131072)
-- 1e300 is integral but far beyond any int: it must be called out of range, not "not an integer".
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 1e300, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
