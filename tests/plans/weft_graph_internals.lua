-- expect: tests/plans/weft_graph_internals.lua:6: attempt to index a nil value (local 'primitives')
-- The graph primitives table must not be reachable (as g.__index): replacing
-- primitives there would change the models weft.gpt2 builds for every later call.
local g = weft.graph { seq = 4, vocab = 4 }
local primitives = g.__index
primitives.gelu = function(self, x) return x end
return weft.plan {}
