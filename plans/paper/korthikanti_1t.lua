-- korthikanti_1t.lua: Korthikanti et al. 2022's 1T GPT (Table 5): 128 layers, hidden 25600,
-- 160 heads (head size 160), seq 2048, vocab 51200, on 512 A100 80 GB GPUs (64 x 8):
-- tp 8, pp 64; global batch 512, microbatch 1; bf16.
-- Written with their baseline, full recompute; their method is
-- --set recompute=selective --set mesh.sp=true (selective recompute and
-- sequence parallelism).  For `weft check` and `weft simulate`
-- (bench/paper_memory.sh compares the planned activation memory with the
-- paper's formulas).
local w = weft
return w.plan {
  name = "korthikanti_1t",
  model = w.gpt2 { layers = 128, hidden = 25600, heads = 160, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 64, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 1, tp = 8, pp = 64, sp = false },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 1, global = 512 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
