-- korthikanti_175b.lua: Korthikanti et al. 2022's 175B GPT (Table 5): 96 layers, hidden 12288,
-- 96 heads (head size 128), seq 2048, vocab 51200, on 64 A100 80 GB GPUs (8 x 8):
-- tp 8, pp 8; global batch 64, microbatch 1; bf16.
-- Written with their baseline, full recompute; their method is
-- --set recompute=selective --set mesh.sp=true (selective recompute and
-- sequence parallelism).  For `weft check` and `weft simulate`
-- (bench/paper_memory.sh compares the planned activation memory with the
-- paper's formulas).
local w = weft
return w.plan {
  name = "korthikanti_175b",
  model = w.gpt2 { layers = 96, hidden = 12288, heads = 96, seq = 2048, vocab = 51200 },
  cluster = w.cluster { nodes = 8, devices_per_node = 8, device = w.gpu.A100_80GB },
  mesh = { dp = 1, tp = 8, pp = 8, sp = false },
  pipeline = { schedule = "1f1b" },
  batch = { micro = 1, global = 64 },
  precision = "bf16",
  recompute = "full",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
