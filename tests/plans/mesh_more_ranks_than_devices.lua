-- expect: tests/plans/mesh_more_ranks_than_devices.lua:4: plan.mesh: dp * tp * pp = 4 ranks, but the cluster has 2 devices (valid: a mesh whose product is 2, or comm = "mpi" to let ranks share devices)
-- More ranks than GPUs: with NCCL each rank needs a device of its own.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.H100_SXM },
  mesh = { dp = 4 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
