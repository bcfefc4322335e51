-- expect: tests/plans/unknown_field_mesh.lua:4: mesh.dq: unknown field (did you mean 'dp'?) (valid: dp, order, pp, sp, tp)
-- A misspelt field in the nested mesh table.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dq = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
