-- expect: tests/plans/zero2_zbh1.lua:4: plan.zero: 2 with the zb-h1 schedule is not supported yet by this version of weft (valid: 0 or 1, or another pipeline.schedule)
-- zb-h1 computes weight gradients late, outside the chunk backward that owns the bucket buffers.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, pp = 2 },
  pipeline = { schedule = "zb-h1" },
  zero = 2,
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
