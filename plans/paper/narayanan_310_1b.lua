-- narayanan_310_1b.lua: Narayanan et al. SC21's 310.1B GPT (Table 1): 96 layers, hidden 16384,
-- 128 heads (head size 128), seq 2048, vocab 51200, on 1920 A100 80 GB GPUs (240 x 8):
-- tp 8, pp 16 interleaved over 2 chunks per rank, dp 15; global batch 2160, microbatch 1; bf16.
-- As the paper ran it: full recompute, no sequence parallelism.  The other mode
-- (Korthikanti et al. 2022): --set recompute=selective --set mesh.sp=true.
-- For `weft check` and `weft simulate` (bench/paper_memory.sh compares the
-- planned activation memory with Korthikanti's formulas).
local w = weft
return w.plan {
  name = "narayanan_310_1b",
  model = w.gpt2 { layers = 96, hidden = 16384, heads = 128, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 240, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 15, tp = 8, pp = 16, sp = false },
  pipeline = { schedule = "interleaved", virtual = 2 },
  batch = { micro = 1, global = 2160 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
