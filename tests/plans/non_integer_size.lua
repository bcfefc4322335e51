-- expect: tests/plans/non_integer_size.lua:5: gpt2.hidden: expected an integer, got number 64.5 (valid: an integer in 1 .. 65536)
-- A fractional size.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64.5, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
