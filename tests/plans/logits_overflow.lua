-- expect: tests/plans/logits_overflow.lua:4: batch.micro: micro * seq * vocab = 4294967296 logits overflow a 32-bit index (valid: micro <= 31)
-- Every field is in range, but micro * seq * vocab does not fit the kernels' int index.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 1024, vocab = 65536 },
  batch = { micro = 64 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
