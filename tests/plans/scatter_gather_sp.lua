-- expect: tests/plans/scatter_gather_sp.lua:4: pipeline.scatter_gather: true with mesh.sp: under sequence parallelism each tp rank already sends only its 1/tp of the sequence (valid: false (or leave it out))
-- Under sequence parallelism the boundary tensor is already split by tokens.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { tp = 2, pp = 2, sp = true },
  batch = { micro = 8 },
  pipeline = { scatter_gather = true },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
