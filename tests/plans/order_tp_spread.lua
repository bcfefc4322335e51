-- expect: tests/plans/order_tp_spread.lua:4: mesh.order: "dp-tp-pp" spreads each tp group over 8 consecutive ranks, more than one node of 4 devices (valid: an order with tp innermost, e.g. "tp-dp-pp")
-- With dp numbered fastest, each tp group's ranks are dp apart: 4 x 2 ranks do not fit a node of 4.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  cluster = w.cluster { nodes = 2, devices_per_node = 4, device = w.gpu.H100_SXM },
  mesh = { dp = 2, tp = 4, order = "dp-tp-pp" },
  batch = { micro = 4, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
