-- expect: tests/plans/sp_not_dividing.lua:4: mesh.sp: sequence parallelism splits micro * seq = 15 tokens, which tp = 2 does not divide
-- Sequence parallelism shards the tokens of a microbatch across the tp group.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 5, vocab = 256 },
  mesh = { tp = 2, sp = true },
  batch = { micro = 3 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
