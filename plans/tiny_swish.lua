-- tiny_swish.lua: plans/tiny.lua with a user kernel as the MLP activation:
-- swish, x sigmoid(x), written in C in kernels/swish.c.  weft checks the file
-- with libclang and proves its gradient before it compiles the plan
-- (README.md, "User kernels").
local w = weft
local swish = w.kernel { source = "kernels/swish.c", kind = "elementwise",
                         forward = "swish_fwd", backward = "swish_bwd" }

return w.plan {
  name = "tiny_swish",
  model = w.gpt2 { layers = 4, hidden = 128, heads = 4, seq = 128, vocab = 256, activation = swish },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.CPU },
  mesh = { dp = 2 },
  batch = { micro = 8, global = 16 },
  buckets = { mb = 0.5 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 20, weight_decay = 0.1 },
  clip_grad_norm = 1.0,
  train = { steps = 400, log_every = 20, seed = 1337 },
  data = { train = "data/synth.bin" },
}
