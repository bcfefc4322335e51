-- expect: tests/plans/too_many_microbatches.lua:4: pipeline.microbatches: batch.global / (micro * dp) = 1048576 / (1 * 1) = 1048576 microbatches a step, more than 16384
-- Valid arithmetic, absurd size: a million microbatches a step would make a
-- schedule (and generated programs) with a line for each.
return weft.plan {
  model = weft.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 16, vocab = 256 },
  cluster = weft.cluster { nodes = 1, devices_per_node = 2, device = weft.gpu.CPU },
  mesh = { pp = 2 },
  batch = { micro = 1, global = 1048576 },
  optimizer = weft.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
