-- expect: tests/plans/precision_unsupported.lua:4: plan.precision: "bf16" is not supported yet by this version of weft (valid: "fp32")
-- A known precision that this version cannot run yet.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  precision = "bf16",
}
