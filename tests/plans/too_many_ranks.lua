-- expect: tests/plans/too_many_ranks.lua:4: plan.mesh: dp * tp * pp = 4194304 ranks, more than weft compiles for (262144)
-- Four million ranks fit a 32-bit rank number, but not a compile that writes
-- a row per rank and builds every group.
return weft.plan {
  model = weft.gpt2 { layers = 8, hidden = 64, heads = 8, seq = 16, vocab = 256 },
  cluster = weft.cluster { nodes = 65536, devices_per_node = 64, device = weft.gpu.CPU },
  mesh = { dp = 65536, tp = 8, pp = 8 },
  batch = { micro = 1, global = 524288 },
  optimizer = weft.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
