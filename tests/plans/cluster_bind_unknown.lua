-- expect: tests/plans/cluster_bind_unknown.lua:6: cluster.bind: "yes" is not a known value (valid: auto, off, stages, all)
-- A binding of ranks to cores the CPU runtime does not know.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 4, device = w.gpu.CPU,
                        bind = "yes" },
  mesh = { dp = 2, pp = 2 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
