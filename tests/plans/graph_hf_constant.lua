-- expect: tests/plans/graph_hf_constant.lua:6: graph:hf_constant: value "wte.weight" is not a parameter of the shape given (valid: a number, or the name of a parameter defined before, of the same shape)
-- A Hugging Face constant copies a parameter only if it has the same shape.
local g = weft.graph { seq = 8, vocab = 16 }
g:param("wte.weight", { 16, 8 }, "normal", 0.02, 1)
g:hf_constant("post.weight", { 8 }, 1)
g:hf_constant("lm_head.weight", { 16, 4 }, "wte.weight")
return g
