-- expect: tests/plans/weft_replace_internals.lua:8: gpt2.heads: 5 does not divide hidden = 64
-- Replacing functions in the weft table (and the math library the plan shares
-- with weft) must not change how weft itself checks and builds models.
local w = weft
w.graph = function() error("weft used the plan's graph function") end
math.type = function() return "integer" end
table.concat = function() return "" end
local m = w.gpt2 { layers = 2, hidden = 64, heads = 5, seq = 64, vocab = 256 }
