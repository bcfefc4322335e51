-- llama_kernel.lua: a small LLaMA whose MLP gate is the user kernel kernels/swiglu.c: tests/e2e/user_kernels.sh
local w = weft
local swiglu = w.kernel { source = "kernels/swiglu.c", kind = "elementwise2", forward = "swiglu_fwd", backward = "swiglu_bwd" }
return w.plan {
  model = w.llama { layers = 2, hidden = 64, heads = 4, kv_heads = 2, ffn_hidden = 176, seq = 64, vocab = 256, mlp_gate = swiglu },
  cluster = w.cluster { nodes = 1, devices_per_node = 4, device = w.gpu.CPU },
  batch = { micro = 4, global = 16 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 2, weight_decay = 0.1 },
  clip_grad_norm = 1.0,
  train = { steps = 8, log_every = 1, seed = 1337 },
  data = { train = "data/synth.bin" },
}
