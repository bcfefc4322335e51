-- expect: tests/plans/nccl_with_mpi.lua:4: plan.nccl: is for comm = "nccl"; comm = "mpi" runs no NCCL (valid: leave nccl out, or comm = "nccl")
-- NCCL settings for a plan that runs no NCCL.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  comm = "mpi", nccl = { proto = "Simple" },
}
