-- expect: tests/plans/scatter_gather_no_tp.lua:4: pipeline.scatter_gather: true splits pipeline messages across tp ranks, but mesh has tp = 1 and pp = 2 (valid: false, or tp > 1 and pp > 1)
-- Nothing to split a pipeline message across without tensor parallelism.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  batch = { micro = 8 },
  pipeline = { scatter_gather = true },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
