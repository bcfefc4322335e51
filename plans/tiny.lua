-- tiny.lua: the default plan.  A small GPT that learns the synthetic language
-- from `weft data synth` in about a minute on two CPU cores (400 steps), already data-parallel.
local w = weft

return w.plan {
  name = "tiny",
  model = w.gpt2 { layers = 4, hidden = 128, heads = 4, seq = 128, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.CPU },
  mesh = { dp = 2 },
  batch = { micro = 8, global = 16 },
  buckets = { mb = 0.5 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 20, weight_decay = 0.1 },
  clip_grad_norm = 1.0,
  train = { steps = 400, log_every = 20, seed = 1337 },
  data = { train = "data/synth.bin" },
}
