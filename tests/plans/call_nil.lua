-- expect: tests/plans/call_nil.lua:4: attempt to call a nil value (field 'gpt3')
-- A runtime error: calling something that does not exist.
local w = weft
local model = w.gpt3 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 }
return w.plan { model = model }
