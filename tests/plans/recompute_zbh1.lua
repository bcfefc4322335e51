-- expect: tests/plans/recompute_zbh1.lua:4: plan.recompute: "full" with the zb-h1 schedule is not supported yet by this version of weft
-- zb-h1 defers weight gradients past the point where recompute reuses the activations.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { pp = 2 },
  pipeline = { schedule = "zb-h1" },
  recompute = "full",
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
