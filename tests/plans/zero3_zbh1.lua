-- expect: tests/plans/zero3_zbh1.lua:4: plan.zero: 3 with the zb-h1 schedule is not supported yet by this version of weft (valid: 0, 1 or 2, or another pipeline.schedule)
-- ZeRO-3's parameter all-gathers are planned per chunk backward; zb-h1 splits it into B and W.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, pp = 2 },
  pipeline = { schedule = "zb-h1" },
  zero = 3,
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
