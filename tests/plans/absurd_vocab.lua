-- expect: tests/plans/absurd_vocab.lua:5: gpt2.vocab: 10000000 is above the maximum 65536 (valid: 2 .. 65536)
-- Tokens are stored as uint16: a vocabulary of 1e7 cannot be represented.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 1e7 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
