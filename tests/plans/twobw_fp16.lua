-- expect: tests/plans/twobw_fp16.lua:4: plan.precision: "fp16" with pipedream-2bw over pp > 1: skipping a step on an overflow needs every stage's verdict at each optimizer step, which would synchronise the asynchronous stages (valid: "fp32" or "bf16")
-- fp16's shared overflow verdict would synchronise asynchronous 2BW stages.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  pipeline = { schedule = "pipedream-2bw" },
  precision = "fp16",
  clip_grad_norm = 0,
  batch = { micro = 4, global = 16 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
