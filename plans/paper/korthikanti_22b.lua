-- korthikanti_22b.lua: Korthikanti et al. 2022's 22B GPT (Table 5): 48 layers, hidden 6144,
-- 64 heads (head size 96), seq 2048, vocab 51200, on 8 A100 80 GB GPUs (1 x 8):
-- tp 8, pp 1; global batch 4, microbatch 4; bf16.
-- Written with their baseline, full recompute; their method is
-- --set recompute=selective --set mesh.sp=true (selective recompute and
-- sequence parallelism).  For `weft check` and `weft simulate`
-- (bench/paper_memory.sh compares the planned activation memory with the
-- paper's formulas).
local w = weft
return w.plan {
  name = "korthikanti_22b",
  model = w.gpt2 { layers = 48, hidden = 6144, heads = 64, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 1, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 1, tp = 8, pp = 1, sp = false },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 4, global = 4 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
