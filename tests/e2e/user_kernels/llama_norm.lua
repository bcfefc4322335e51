-- llama_norm.lua: a small LLaMA whose RMSNorms are the rowwise user kernel kernels/rmsnorm.c: tests/e2e/user_kernels_rowwise.sh
local w = weft
local rms = w.kernel { source = "kernels/rmsnorm.c", kind = "rowwise", forward = "rms_fwd", backward = "rms_bwd", params = true }
return w.plan {
  model = w.llama { layers = 2, hidden = 64, heads = 4, kv_heads = 2, ffn_hidden = 176, seq = 64, vocab = 256, norm = rms },
  cluster = w.cluster { nodes = 1, devices_per_node = 4, device = w.gpu.CPU },
  batch = { micro = 4, global = 16 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 2, weight_decay = 0.1 },
  clip_grad_norm = 1.0,
  train = { steps = 8, log_every = 1, seed = 1337 },
  data = { train = "data/synth.bin" },
}
