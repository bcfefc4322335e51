-- expect: tests/plans/endless_loop_garbage.lua:5: plan stopped: it ran past its
-- An endless loop that allocates garbage: memory stays low, so the budget must stop it.
-- (one line: the CPU limit or the budget may stop it at any statement)
local n = 0
while true do local t = { n, tostring(n) }; n = n + 1 end
