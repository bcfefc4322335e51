-- expect: tests/plans/absurd_layers.lua:5: gpt2.layers: 1000000000 is above the maximum 1024 (valid: 1 .. 1024)
-- An absurd size, written as a float (1e9): still an integer, but out of range.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 1e9, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
