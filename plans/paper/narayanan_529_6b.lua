-- narayanan_529_6b.lua: Narayanan et al. SC21's 529.6B GPT (Table 1): 105 layers, hidden 20480,
-- 128 heads (head size 160), seq 2048, vocab 51200, on 2520 A100 80 GB GPUs (315 x 8):
-- tp 8, pp 35 interleaved over 3 chunks per rank, dp 9; global batch 2520, microbatch 1; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_529_6b",
  model = w.gpt2 { layers = 105, hidden = 20480, heads = 128, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 315, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 9, tp = 8, pp = 35, sp = false },
  pipeline = { schedule = "interleaved", virtual = 3 },
  batch = { micro = 1, global = 2520 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
