-- gpt2_kernel.lua: a small GPT-2 whose MLP activation is the user kernel kernels/gelu.c: tests/e2e/user_kernels.sh
local w = weft
local gelu = w.kernel { source = "kernels/gelu.c", kind = "elementwise", forward = "gelu_fwd", backward = "gelu_bwd" }
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256, activation = gelu },
  cluster = w.cluster { nodes = 1, devices_per_node = 4, device = w.gpu.CPU },
  batch = { micro = 4, global = 16 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 2, weight_decay = 0.1 },
  clip_grad_norm = 1.0,
  train = { steps = 8, log_every = 1, seed = 1337 },
  data = { train = "data/synth.bin" },
}
