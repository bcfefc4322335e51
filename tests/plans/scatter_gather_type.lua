-- expect: tests/plans/scatter_gather_type.lua:4: pipeline.scatter_gather
-- A yes/no choice, not a word.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { tp = 2, pp = 2 },
  batch = { micro = 8 },
  pipeline = { scatter_gather = "yes" },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
