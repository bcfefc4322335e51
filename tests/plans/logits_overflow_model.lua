-- expect: tests/plans/logits_overflow_model.lua:4: batch.micro: micro * seq * vocab = 4294967296 logits overflow a 32-bit index (valid: a smaller model: seq * vocab = 4294967296 overflows even with micro = 1)
-- Even one sequence overflows: the message must not suggest "micro <= 0".
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 65536, vocab = 65536 },
  batch = { micro = 1 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
