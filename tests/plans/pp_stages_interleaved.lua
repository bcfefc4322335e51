-- expect: tests/plans/pp_stages_interleaved.lua:5: pipeline.stages: lists 2 layer counts for 4 chunks (valid: 4 counts (pp * virtual), summing to 4)
-- An interleaved pipeline's partition lists every chunk's layers (pp * virtual
-- counts, chunk k on stage k % pp), not one count per stage.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  pipeline = { schedule = "interleaved", virtual = 2, stages = { 2, 2 } },
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
