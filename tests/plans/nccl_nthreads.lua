-- expect: tests/plans/nccl_nthreads.lua:4: nccl.nthreads: 100 is not a known value (valid: 64, 128, 256, 512)
-- A thread count NCCL does not take.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  nccl = { nthreads = 100 },
}
