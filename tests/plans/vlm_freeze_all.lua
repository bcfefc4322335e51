-- expect: tests/plans/vlm_freeze_all.lua:7: vlm.freeze: every part frozen: nothing would train (valid: at most two of vision, projector and llm true)
-- Freezing the encoder, the projector and the language model leaves nothing to train.
local w = weft
local llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16 }
local vit = w.vit { image = 32, patch = 8, layers = 2, hidden = 32, heads = 2 }
return w.plan {
  model = w.vlm { vision = vit, llm = llm, image_token = 14,
                  freeze = { vision = true, projector = true, llm = true } },
  batch = { micro = 4 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/vlm.bin" },
}
