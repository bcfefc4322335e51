-- gpt_1t.lua: a 1-trillion-parameter GPT (Narayanan et al. 2021's largest
-- configuration) on 3072 H100s: tp 8 inside each node, 64 pipeline stages,
-- 6 data-parallel replicas.  For `weft check` and `weft simulate`.
local w = weft
return w.plan {
  name = "gpt_1t",
  model = w.gpt2 { layers = 128, hidden = 25600, heads = 160, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 384, devices_per_node = 8, device = w.gpu.H100_SXM },
  mesh = { dp = 6, tp = 8, pp = 64, sp = true },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 1, global = 3072 },
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 6e-5, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
