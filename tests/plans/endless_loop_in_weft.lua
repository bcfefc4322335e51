-- expect: tests/plans/endless_loop_in_weft.lua:5: plan stopped: it ran past its
-- An endless loop that spends its time inside weft: the stop must still name the plan's line.
local w = weft
while true do
  w.gpt2 { layers = 8, hidden = 64, heads = 4, seq = 64, vocab = 256 }
end
