-- expect: tests/plans/vlm_sp.lua:6: mesh.sp: true with weft.vlm is not supported yet by this version of weft (valid: false)
-- Sequence parallelism would split the image rows the encoder hands over.
local w = weft
local llm = w.gpt2 { layers = 2, hidden = 32, heads = 2, seq = 24, vocab = 16 }
local vit = w.vit { image = 32, patch = 8, layers = 2, hidden = 32, heads = 2 }
return w.plan {
  model = w.vlm { vision = vit, llm = llm, image_token = 14 },
  cluster = w.cluster { devices_per_node = 2, device = w.gpu.CPU },
  mesh = { tp = 2, sp = true },
  batch = { micro = 4 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/vlm.bin" },
}
