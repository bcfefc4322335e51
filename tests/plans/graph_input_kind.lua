-- expect: tests/plans/graph_input_kind.lua:5: graph:input: kind "audio" is not an input weft reads (valid: "tokens")
-- A graph's inputs are of the kinds the runtime's data loader reads.
local w = weft
local g = w.graph { seq = 8, vocab = 16 }
g:input { kind = "audio" }
