-- vlm_llama.lua: plans/vlm_tiny.lua's vision tower and projector in front of
-- a small LLaMA (grouped-query attention, RoPE, SwiGLU): the layout of
-- Hugging Face's LLaVA with a SigLIP tower.  Its checkpoints load in
-- transformers' LlavaForConditionalGeneration (bench/hf_llava.sh shows it):
--   weft data vlm-synth -o data/vlm.bin --image 32 --patch 8 --seq 24
local w = weft

return w.plan {
  name = "vlm_llama",
  model = w.vlm {
    vision = w.vit { image = 32, patch = 8, channels = 3, layers = 2, hidden = 32, heads = 2, mlp = 64,
                     init_std = 0.1 },
    projector = { layers = 2 },
    llm = w.llama { layers = 2, hidden = 32, heads = 4, kv_heads = 2, ffn_hidden = 64, seq = 24, vocab = 16,
                    init_std = 0.1 },
    image_token = 14,
  },
  cluster = w.cluster { nodes = 1, devices_per_node = 1, device = w.gpu.CPU },
  batch = { micro = 32, global = 32 },
  optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 10, weight_decay = 0.0 },
  clip_grad_norm = 1.0,
  train = { steps = 300, log_every = 20, seed = 1337 },
  data = { train = "data/vlm.bin" },
}
