-- narayanan_1008b.lua: Narayanan et al. SC21's 1008B GPT (Table 1): 128 layers, hidden 25600,
-- 160 heads (head size 160), seq 2048, vocab 51200, on 3072 A100 80 GB GPUs (384 x 8):
-- tp 8, pp 64, dp 6; global batch 3072, microbatch 1; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_1008b",
  model = w.gpt2 { layers = 128, hidden = 25600, heads = 160, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 384, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 6, tp = 8, pp = 64, sp = false },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 1, global = 3072 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
