-- llama_70b.lua: a LLaMA-2-70B-shaped model (80 layers, hidden 8192, 64 query
-- heads sharing 8 key/value heads, SwiGLU 28672, vocab 32000, seq 4096) on
-- 8 nodes x 8 H100s: tp 8 inside each node (one key/value head per rank),
-- sequence parallel, dp 8 across nodes with ZeRO-1.  For `weft check` and
-- `weft simulate`: in fp32 as written (see --set precision=bf16, zero=3) the
-- model states alone need about 1.1 TB, so `weft check` reports that it does
-- not fit; a real run would add pipeline stages and bf16.
local w = weft
return w.plan {
  name = "llama_70b",
  model = w.llama { layers = 80, hidden = 8192, heads = 64, kv_heads = 8, ffn_hidden = 28672,
                    seq = 4096, vocab = 32000 },
  cluster = w.cluster { nodes = 8, devices_per_node = 8, device = w.gpu.H100_SXM },
  mesh = { dp = 8, tp = 8, sp = true },
  batch = { micro = 1, global = 512 },
  zero = 1,
  recompute = "selective",
  buckets = { mb = 25 },
  optimizer = w.adamw { lr = 1.5e-4, min_lr = 1.5e-5, warmup = 2000 },
  train = { steps = 100000 },
  data = { train = "data/train.bin" },
}
