-- expect: tests/plans/graph_param_layout_dims.lua:5: ln.weight: layout "transposed" of a 1-dimensional parameter (valid: nil, "transposed" for a matrix, or "qkv" for a qkv_proj weight or bias)
-- Only a matrix can be stored transposed (Graph:param's layout).
local w = weft
local g = w.graph { seq = 8, vocab = 16 }
g:param("ln.weight", { 8 }, "ones", 0, 0, "transposed")
