-- vlm_tiny.lua: a small vision-language model (a 2-layer ViT on 32x32 images
-- in 8x8 patches, LLaVA's two-layer projector, a 2-layer GPT-2) that learns to
-- describe `weft data vlm-synth` images ("a red circle on the left") on a CPU:
--   weft data vlm-synth -o data/vlm.bin --image 32 --patch 8 --seq 24
-- The 16 patches replace the 16 image placeholders that start every sample.
local w = weft

return w.plan {
  name = "vlm_tiny",
  model = w.vlm {
    -- init_std 0.1 (about 1 / sqrt(hidden)): with GPT-2's 0.02 these narrow
    -- layers sit for hundreds of steps before the captions attend to the image
    vision = w.vit { image = 32, patch = 8, channels = 3, layers = 2, hidden = 32, heads = 2, mlp = 64,
                     init_std = 0.1 },
    projector = { layers = 2 },
    llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16, init_std = 0.1 },
    image_token = 14,
  },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 32, global = 32 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 10, weight_decay = 0.0 },
  clip_grad_norm = 1.0,
  train = { steps = 300, log_every = 20, seed = 1337 },
  data = { train = "data/vlm.bin" },
}
