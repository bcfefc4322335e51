-- expect: tests/kernels/src/attribute.c:4:42: hello carries attributes (rule: plain C functions; weft adds what each backend needs)
local w = weft
local k = w.kernel { source = "src/attribute.c", kind = "elementwise", forward = "swish_fwd", backward = "swish_bwd" }
return w.plan {
  model = w.gpt2 { layers = 1, hidden = 32, heads = 2, seq = 16, vocab = 64, activation = k },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 2, global = 2 },
  optimizer = w.adamw { lr = 1e-3 },
  train = { steps = 1 },
  data = { train = "data/synth.bin" },
}
