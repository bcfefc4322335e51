-- expect: tests/plans/pp_interleaved_micro.lua:4: pipeline.microbatches: the interleaved schedule needs a multiple of pp = 2 microbatches, got 3
-- Megatron's interleaved schedule runs microbatches in groups of pp.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  pipeline = { schedule = "interleaved", virtual = 2 },
  batch = { micro = 2, global = 6 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
