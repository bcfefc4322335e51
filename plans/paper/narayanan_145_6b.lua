-- narayanan_145_6b.lua: Narayanan et al. SC21's 145.6B GPT (Table 1): 80 layers, hidden 12288,
-- 96 heads (head size 128), seq 2048, vocab 51200, on 1536 A100 80 GB GPUs (192 x 8):
-- tp 8, pp 8 interleaved over 2 chunks per rank, dp 24; global batch 2304, microbatch 2; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_145_6b",
  model = w.gpt2 { layers = 80, hidden = 12288, heads = 96, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 192, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 24, tp = 8, pp = 8, sp = false },
  pipeline = { schedule = "interleaved", virtual = 2 },
  batch = { micro = 2, global = 2304 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
