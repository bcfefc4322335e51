-- expect: tests/plans/mesh_cluster_mismatch.lua:4: plan.mesh: dp * tp * pp = 4 ranks, but the cluster has 8 devices (valid: a mesh whose product is 8)
-- On GPUs every device must get a rank.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 8, device = w.gpu.H100_SXM },
  mesh = { dp = 4 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
