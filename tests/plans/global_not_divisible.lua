-- expect: tests/plans/global_not_divisible.lua:4: batch.global: 24 is not a multiple of batch.micro * mesh.dp = 8 * 2 = 16 (valid: a multiple of 16, e.g. 16, 32, 64)
-- The global batch must be micro * dp * (whole accumulation steps).
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.CPU },
  mesh = { dp = 2 },
  batch = { micro = 8, global = 24 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
