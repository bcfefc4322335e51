-- expect: tests/plans/nccl_channels_order.lua:4: nccl.min_nchannels: 16 is above nccl.max_nchannels = 8 (valid: 1 .. 8)
-- More channels at least than at most.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  nccl = { min_nchannels = 16, max_nchannels = 8 },
}
