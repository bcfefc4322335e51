-- expect: tests/plans/mesh_world_overflow.lua:4: plan.mesh: dp * tp * pp = 68719476736 ranks overflow a 32-bit rank number (valid: dp * tp * pp <= 2147483647)
-- Each size within its own limit, their product past what a rank number holds.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 65536, tp = 1024, pp = 1024 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
