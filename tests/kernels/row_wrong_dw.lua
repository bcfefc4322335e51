-- expect: tests/kernels/row_wrong_dw.lua:3: kernel.backward: rms_bwd is not the gradient of rms_fwd: worst input dw[0] at n=8, x[0]=14.6674972 w[0]=1.02659411 dy[0]=0.908997273
local w = weft
local k = w.kernel { source = "src/row_wrong_dw.c", kind = "rowwise", forward = "rms_fwd", backward = "rms_bwd", params = true }
return w.plan {
  model = w.llama { layers = 1, hidden = 32, heads = 2, kv_heads = 1, ffn_hidden = 64, seq = 16, vocab = 64, norm = k },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 2, global = 2 },
  optimizer = w.adamw { lr = 1e-3 },
  train = { steps = 1 },
  data = { train = "data/synth.bin" },
}
