-- expect: tests/plans/vlm_freeze_zero3.lua:6: zero: 3 with weft.vlm's freeze is not supported yet by this version of weft (valid: 0, 1 or 2)
-- ZeRO-3 keeps parameters only as shards of gradient buckets; a frozen one is in none.
local w = weft
local llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16 }
local vit = w.vit { image = 32, patch = 8, layers = 2, hidden = 32, heads = 2 }
return w.plan {
  model = w.vlm { vision = vit, llm = llm, image_token = 14, freeze = { vision = true } },
  cluster = w.cluster { devices_per_node = 2, device = w.gpu.CPU },
  mesh = { dp = 2 },
  zero = 3,
  batch = { micro = 4 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/vlm.bin" },
}
