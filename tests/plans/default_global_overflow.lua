-- expect: tests/plans/default_global_overflow.lua:4: batch.micro: batch.micro * mesh.dp = 1048576 * 65536 = 68719476736 is above the largest global batch 16777216 (valid: micro * dp <= 16777216)
-- Without batch.global the global batch is micro * dp; it must obey the same limit (it reaches C as an int).
local w = weft
return w.plan {
  model = w.gpt2 { layers = 1, hidden = 8, heads = 1, seq = 1, vocab = 2 },
  mesh = { dp = 65536 },
  batch = { micro = 1 << 20 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
