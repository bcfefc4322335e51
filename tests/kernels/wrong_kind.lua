-- expect: tests/kernels/wrong_kind.lua:6: llama.mlp_gate: the kernel is elementwise, not elementwise2 (valid: a kernel of kind = "elementwise2")
local w = weft
local k = w.kernel { source = "src/swish.c", kind = "elementwise2", forward = "swish_fwd", backward = "swish_bwd" }
local k2 = w.kernel { source = "src/swish.c", kind = "elementwise", forward = "swish_fwd", backward = "swish_bwd" }
return w.plan {
  model = w.llama { layers = 1, hidden = 32, heads = 2, kv_heads = 2, ffn_hidden = 64, seq = 16, vocab = 64, mlp_gate = k2 },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 2, global = 2 },
  optimizer = w.adamw { lr = 1e-3 },
  train = { steps = 1 },
  data = { train = "data/synth.bin" },
}
