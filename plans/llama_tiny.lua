-- llama_tiny.lua: a small LLaMA (RMSNorm, RoPE, grouped-query attention with
-- 4 query heads sharing 2 key/value heads, SwiGLU, untied LM head) that learns
-- the synthetic language from `weft data synth` on two CPU cores.
local w = weft

return w.plan {
  name = "llama_tiny",
  model = w.llama { layers = 2, hidden = 64, heads = 4, kv_heads = 2, ffn_hidden = 176,
                    seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 2, device = w.gpu.CPU },
  mesh = { dp = 2 },
  batch = { micro = 8, global = 16 },
  buckets = { mb = 0.5 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 20, weight_decay = 0.1 },
  clip_grad_norm = 1.0,
  train = { steps = 300, log_every = 20, seed = 1337 },
  data = { train = "data/synth.bin" },
}
