-- expect: tests/plans/vlm_patch.lua:5: vit.patch: 7 does not divide image = 32 (valid: a divisor of 32: 1, 2, 4, 8, 16, 32)
-- A ViT's patches must tile its image.
local w = weft
local llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16 }
local vit = w.vit { image = 32, patch = 7, layers = 2, hidden = 32, heads = 2 }
return w.plan {
  model = w.vlm { vision = vit, llm = llm, image_token = 14 },
  batch = { micro = 4 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/vlm.bin" },
}
