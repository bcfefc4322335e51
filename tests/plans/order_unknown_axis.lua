-- expect: tests/plans/order_unknown_axis.lua:4: mesh.order: "tp-cp-dp" names "cp", which is not a mesh axis (valid: the axes dp, tp and pp in any order joined by "-", e.g. "tp-dp-pp"; an axis of size 1 may be left out)
-- An axis this version does not have (context parallelism is not one yet).
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, order = "tp-cp-dp" },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
