-- expect: tests/plans/unknown_field_batch.lua:4: batch.globl: unknown field (did you mean 'global'?) (valid: global, micro)
-- A misspelt field in the nested batch table.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8, globl = 16 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
