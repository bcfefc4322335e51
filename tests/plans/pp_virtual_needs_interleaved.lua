-- expect: tests/plans/pp_virtual_needs_interleaved.lua:4: pipeline.virtual: 2 needs schedule = "interleaved"
-- Virtual chunks only mean something to the interleaved schedule.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  pipeline = { schedule = "1f1b", virtual = 2 },
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
