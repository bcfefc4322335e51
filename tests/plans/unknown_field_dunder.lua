-- expect: tests/plans/unknown_field_dunder.lua:4: mesh.__dp: unknown field (did you mean 'dp'?) (valid: dp, order, pp, sp, tp)
-- A field starting with "__" is checked like any other (it was silently ignored).
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { __dp = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
