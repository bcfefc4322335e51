-- expect: tests/plans/zero_pipedream.lua:4: plan.zero: 2 with pipedream-2bw is not supported yet by this version of weft (valid: 0 or 1)
-- PipeDream-2BW keeps two weight versions; ZeRO-1 shards their optimizer, ZeRO-2/3 is not planned.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, pp = 2 },
  pipeline = { schedule = "pipedream-2bw" },
  zero = 2,
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
