-- expect: tests/plans/twobw_few_micro.lua:4: pipeline.microbatches: pipedream-2bw runs without a pipeline flush and needs at least pp = 4 microbatches per step, got 2 (valid: batch.global / (micro * dp) >= 4)
-- PipeDream-2BW without a flush: the next batch starts while this one drains.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 4 },
  pipeline = { schedule = "pipedream-2bw" },
  batch = { micro = 4, global = 8 },
  clip_grad_norm = 0,
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
