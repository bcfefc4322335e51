-- expect: tests/plans/wrong_type_table.lua:4: plan.batch: expected a table, got number 8 (valid: { micro = 4, global = 32 })
-- A table field given a number.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = 8,
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
