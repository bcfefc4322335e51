-- expect: tests/plans/too_many_stages.lua:4: pipeline.microbatches: pp * virtual * microbatches = 1024 * 1 * 1024 = 1048576 forward steps in the schedule, more than 262144
-- 1024 pipeline stages, each running 1024 microbatches: every stage's list
-- holds them all, and checking the schedule simulates every message.
return weft.plan {
  model = weft.gpt2 { layers = 1024, hidden = 64, heads = 4, seq = 16, vocab = 256 },
  cluster = weft.cluster { nodes = 128, devices_per_node = 8, device = weft.gpu.CPU },
  mesh = { pp = 1024 },
  batch = { micro = 1, global = 1024 },
  optimizer = weft.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
