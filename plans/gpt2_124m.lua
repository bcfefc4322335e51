-- gpt2_124m.lua: GPT-2 small (124M parameters: 12 layers, hidden 768, 12
-- heads, seq 1024, vocabulary 50257 padded to 50304) on one H200 in bf16, a
-- micro-batch of 16 sequences: the CUDA benchmark's plan (bench/gpu_gpt2.sh).
-- `weft check plans/gpt2_124m.lua` shows its parameters, FLOPs and memory
-- anywhere; training it needs --backend cuda and a GPU.
local w = weft
return w.plan {
  name = "gpt2_124m",
  model = w.gpt2 { layers = 12, hidden = 768, heads = 12, seq = 1024, vocab = 50304 },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.H200 },
  mesh = { dp = 1 },
  precision = "bf16",
  batch = { micro = 16, global = 16 },
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 6e-4, min_lr = 6e-5, warmup = 100, weight_decay = 0.1 },
  clip_grad_norm = 1.0,
  train = { steps = 50, log_every = 1, seed = 1337 },
  data = { train = "data/gpt2_124m.bin" },
}
