-- expect: tests/plans/order_left_out.lua:4: mesh.order: "dp-tp" leaves out pp = 2 (valid: the axes dp, tp and pp in any order joined by "-", e.g. "tp-dp-pp"; an axis of size 1 may be left out)
-- An order may leave out only axes of size 1 (they go outermost); pp = 2 must be placed.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, pp = 2, order = "dp-tp" },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
