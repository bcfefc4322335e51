-- expect: tests/plans/wrong_type.lua:5: gpt2.layers: expected an integer, got string "2" (valid: an integer in 1 .. 1024)
-- A number written as a string.
local w = weft
return w.plan {
  model = w.gpt2 { layers = "2", hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
