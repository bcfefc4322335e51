-- expect: tests/plans/pp_too_many_chunks.lua:4: mesh.pp: pp * virtual = 8 pipeline chunks, but the model has only 2 layers (valid: pp * virtual <= 2)
-- Each pipeline chunk holds at least one transformer block.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 4 },
  pipeline = { schedule = "interleaved", virtual = 2 },
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
