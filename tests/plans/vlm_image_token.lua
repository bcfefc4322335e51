-- expect: tests/plans/vlm_image_token.lua:7: vlm.image_token: 16 is not a token of the language model's vocabulary (valid: 0 .. 15)
-- The image placeholder is a token of the language model.
local w = weft
local llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16 }
local vit = w.vit { image = 32, patch = 8, layers = 2, hidden = 32, heads = 2 }
return w.plan {
  model = w.vlm { vision = vit, llm = llm, image_token = 16 },
  batch = { micro = 4 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/vlm.bin" },
}
