-- expect: tests/plans/graph_misuse.lua:6: graph:linear: x must be a tensor, got nil (valid: a tensor returned by another primitive of this graph)
-- The graph primitives are public: misuse must name the plan's line, not weft's.
local w = weft
local g = w.graph { seq = 8, vocab = 16 }
local x = g:embedding("wte", "wpe", 8, 0.02)
local y = g:linear(nil, "proj", 8)
