-- narayanan_18_4b.lua: Narayanan et al. SC21's 18.4B GPT (Table 1): 40 layers, hidden 6144,
-- 48 heads (head size 128), seq 2048, vocab 51200, on 256 A100 80 GB GPUs (32 x 8):
-- tp 8, pp 1, dp 32; global batch 1024, microbatch 8; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_18_4b",
  model = w.gpt2 { layers = 40, hidden = 6144, heads = 48, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 32, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 32, tp = 8, pp = 1, sp = false },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 8, global = 1024 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
