-- expect: tests/plans/zero3_with_pp.lua:4: plan.zero: 3 with pipeline parallelism is not supported yet by this version of weft (valid: 0, 1 or 2, or mesh.pp = 1)
-- Every microbatch in flight would all-gather the stage's parameters anew (DeepSpeed refuses it too).
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, pp = 2 },
  zero = 3,
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
