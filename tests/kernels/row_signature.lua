-- expect: tests/kernels/src/row_signature.c:6:6: rms_fwd has type void (int, const float *, float *, float *); a rowwise kernel's forward (params = true) must be void (int n, const float *x, const float *w, float *y) (rule: signature)
local w = weft
local k = w.kernel { source = "src/row_signature.c", kind = "rowwise", forward = "rms_fwd", backward = "rms_bwd", params = true }
return w.plan {
  model = w.llama { layers = 1, hidden = 32, heads = 2, kv_heads = 1, ffn_hidden = 64, seq = 16, vocab = 64, norm = k },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 2, global = 2 },
  optimizer = w.adamw { lr = 1e-3 },
  train = { steps = 1 },
  data = { train = "data/synth.bin" },
}
