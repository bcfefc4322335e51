-- expect: tests/plans/positional_value.lua:5: gpt2[1]: unexpected positional value number 2; fields must be named (valid: activation, heads, hidden, init_std, layers, seq, vocab)
-- A value without a field name.
local w = weft
return w.plan {
  model = w.gpt2 { 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
