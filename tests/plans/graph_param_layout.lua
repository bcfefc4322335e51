-- expect: tests/plans/graph_param_layout.lua:6: ln.weight: layout "out_in" (valid: nil, "transposed" for a matrix, or "qkv" for a qkv_proj weight or bias)
-- A checkpoint layout is a mark on the parameter (Graph:param): nil, or
-- "transposed" (Hugging Face's (out, in) nn.Linear weights).
local w = weft
local g = w.graph { seq = 8, vocab = 16 }
g:param("ln.weight", { 8, 8 }, "ones", 0, 0, "out_in")
