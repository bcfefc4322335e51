-- expect: tests/kernels/missing_function.lua:3: kernel.forward: no function swish is defined in src/swish.c (rule: the named functions)
local w = weft
local k = w.kernel { source = "src/swish.c", kind = "elementwise", forward = "swish", backward = "swish_bwd" }
return w.plan {
  model = w.gpt2 { layers = 1, hidden = 32, heads = 2, seq = 16, vocab = 64, activation = k },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 2, global = 2 },
  optimizer = w.adamw { lr = 1e-3 },
  train = { steps = 1 },
  data = { train = "data/synth.bin" },
}
