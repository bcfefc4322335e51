-- expect: tests/plans/comm_unknown.lua:4: plan.comm: "gloo" is not a known value (valid: nccl, mpi)
-- An unknown communication backend.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  comm = "gloo",
}
