-- expect: tests/kernels/src/recursion_mutual.c:6:12: recursion: odd -> even -> odd (rule: no recursion)
local w = weft
local k = w.kernel { source = "src/recursion_mutual.c", kind = "elementwise", forward = "swish_fwd", backward = "swish_bwd" }
return w.plan {
  model = w.gpt2 { layers = 1, hidden = 32, heads = 2, seq = 16, vocab = 64, activation = k },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 2, global = 2 },
  optimizer = w.adamw { lr = 1e-3 },
  train = { steps = 1 },
  data = { train = "data/synth.bin" },
}
