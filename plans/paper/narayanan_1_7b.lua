-- narayanan_1_7b.lua: Narayanan et al. SC21's 1.7B GPT (Table 1): 24 layers, hidden 2304,
-- 24 heads (head size 96), seq 2048, vocab 51200, on 32 A100 80 GB GPUs (4 x 8):
-- tp 1, pp 1, dp 32; global batch 512, microbatch 16; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_1_7b",
  model = w.gpt2 { layers = 24, hidden = 2304, heads = 24, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 4, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 32, tp = 1, pp = 1, sp = false },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 16, global = 512 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
