-- expect: tests/kernels/src/gate_pointer.c:8:7: pointer arithmetic '+' (rule: a kernel touches only the values it is given)
local w = weft
local k = w.kernel { source = "src/gate_pointer.c", kind = "elementwise2", forward = "gate_fwd", backward = "gate_bwd" }
return w.plan {
  model = w.llama { layers = 1, hidden = 32, heads = 2, kv_heads = 2, ffn_hidden = 64, seq = 16, vocab = 64, mlp_gate = k },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 2, global = 2 },
  optimizer = w.adamw { lr = 1e-3 },
  train = { steps = 1 },
  data = { train = "data/synth.bin" },
}
