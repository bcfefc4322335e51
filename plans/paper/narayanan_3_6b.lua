-- narayanan_3_6b.lua: Narayanan et al. SC21's 3.6B GPT (Table 1): 30 layers, hidden 3072,
-- 32 heads (head size 96), seq 2048, vocab 51200, on 64 A100 80 GB GPUs (8 x 8):
-- tp 2, pp 1, dp 32; global batch 512, microbatch 16; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_3_6b",
  model = w.gpt2 { layers = 30, hidden = 3072, heads = 32, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 8, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 32, tp = 2, pp = 1, sp = false },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 16, global = 512 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
