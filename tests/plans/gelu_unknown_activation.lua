-- expect: tests/plans/gelu_unknown_activation.lua:4: gpt2.activation: "relu" is not a known value (valid: gelu_new, gelu, or an elementwise kernel)
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 32, vocab = 256,
                   activation = "relu" },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 4, global = 4 },
  data = { train = "data/synth.bin" },
}
