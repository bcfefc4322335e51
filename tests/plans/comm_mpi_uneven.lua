-- expect: tests/plans/comm_mpi_uneven.lua:4: plan.mesh: dp * tp * pp = 6 ranks do not share the cluster's 4 devices evenly (comm = "mpi") (valid: a mesh whose product is a multiple of 4)
-- comm = "mpi" lets ranks share devices, but evenly: 6 ranks on 4 GPUs is not.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 4, device = w.gpu.H100_SXM },
  mesh = { dp = 6 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  comm = "mpi",
}
