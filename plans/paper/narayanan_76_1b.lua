-- narayanan_76_1b.lua: Narayanan et al. SC21's 76.1B GPT (Table 1): 60 layers, hidden 10240,
-- 80 heads (head size 128), seq 2048, vocab 51200, on 1024 A100 80 GB GPUs (128 x 8):
-- tp 8, pp 4 interleaved over 3 chunks per rank, dp 32; global batch 1792, microbatch 2; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_76_1b",
  model = w.gpt2 { layers = 60, hidden = 10240, heads = 80, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 128, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 32, tp = 8, pp = 4, sp = false },
  pipeline = { schedule = "interleaved", virtual = 3 },
  batch = { micro = 2, global = 1792 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
