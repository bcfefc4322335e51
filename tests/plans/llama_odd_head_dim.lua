-- expect: tests/plans/llama_odd_head_dim.lua:5: llama.heads: head size hidden / heads = 60 / 4 = 15 is odd; RoPE turns pairs of features (valid: heads making hidden / heads even)
-- RoPE rotates pairs of features within each head, so the head size must be even.
local w = weft
return w.plan {
  model = w.llama { layers = 2, hidden = 60, heads = 4, kv_heads = 2, ffn_hidden = 160, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
