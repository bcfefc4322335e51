-- expect: tests/plans/order_twice.lua:4: mesh.order: "tp-dp-dp" names dp twice (valid: the axes dp, tp and pp in any order joined by "-", e.g. "tp-dp-pp"; an axis of size 1 may be left out)
-- Each axis at most once in the order.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, order = "tp-dp-dp" },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
