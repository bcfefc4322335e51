-- expect: tests/plans/zero_stage2.lua:4: plan.zero: 2 is not supported yet by this version of weft (valid: 0 or 1)
-- ZeRO-1 (optimizer state sharded over dp) is implemented; stages 2 and 3 are not.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2 },
  zero = 2,
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
