-- expect: tests/plans/negative_size.lua:5: gpt2.hidden: -64 is below the minimum 1 (valid: 1 .. 65536)
-- A negative size.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = -64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
