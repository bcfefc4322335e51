-- expect: tests/plans/graph_param_layout_qkv.lua:6: attn.qkv.weight: layout "qkv" (valid: nil, "transposed" for a matrix, or "qkv" for a qkv_proj weight or bias)
-- layout "qkv" saves the parameter as three tensors named by reading
-- "qkv_proj" in its name as q_proj, k_proj and v_proj: a name without it has
-- no such names.
local g = weft.graph { seq = 8, vocab = 16 }
g:param("attn.qkv.weight", { 8, 24 }, "normal", 0.02, 1, "qkv")
return g
