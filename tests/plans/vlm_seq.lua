-- expect: tests/plans/vlm_seq.lua:7: vlm.vision: the image's 64 patches do not fit the language model's seq = 24 (valid: a larger patch or seq >= 64)
-- Each sample's patches replace its first positions: they must fit.
local w = weft
local llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16 }
local vit = w.vit { image = 32, patch = 4, layers = 2, hidden = 32, heads = 2 }
return w.plan {
  model = w.vlm { vision = vit, llm = llm, image_token = 14 },
  batch = { micro = 4 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/vlm.bin" },
}
