-- expect: tests/plans/twobw_clip.lua:4: plan.clip_grad_norm: 1.0 with pipedream-2bw over pp > 1: the stages update asynchronously and a global norm would synchronise them (valid: 0)
-- Global-norm clipping (default 1.0) is refused with asynchronous 2BW stages.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  pipeline = { schedule = "pipedream-2bw" },
  batch = { micro = 4, global = 16 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
