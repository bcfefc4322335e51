-- gpt2_3d.lua: a small GPT on a 3D mesh, dp 2 x tp 2 x pp 2 = 8 CPU ranks:
-- tensor parallelism with sequence parallelism inside each pair of ranks,
-- an interleaved pipeline of 2 stages x 2 chunks, and data parallelism over
-- both.  Runs here oversubscribed; `weft check` shows the partition and the
-- pipeline timeline, `weft inspect` every rank's program.
local w = weft
return w.plan {
  name = "gpt2_3d",
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 1, devices_per_node = 8, device = w.gpu.CPU },
  mesh = { dp = 2, tp = 2, pp = 2, sp = true },
  pipeline = { schedule = "interleaved", virtual = 2 },
  batch = { micro = 2, global = 16 },
  buckets = { mb = 0.25 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 10 },
  train = { steps = 50, log_every = 10 },
  data = { train = "data/synth.bin" },
}
