-- expect: tests/plans/recompute_selective.lua:4: plan.recompute: "selective" is not supported yet by this version of weft (valid: "none" or "full")
-- Full recompute is implemented; selective (attention only) is not.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  recompute = "selective",
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
