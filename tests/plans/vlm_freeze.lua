-- expect: tests/plans/vlm_freeze.lua:7: vlm.freeze.vison: unknown field
-- A misspelt part of weft.vlm's freeze names the field and its line.
local w = weft
local llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16 }
local vit = w.vit { image = 32, patch = 8, layers = 2, hidden = 32, heads = 2 }
return w.plan {
  model = w.vlm { vision = vit, llm = llm, image_token = 14,
                  freeze = { vison = true } },
  batch = { micro = 4 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/vlm.bin" },
}
