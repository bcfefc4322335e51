-- expect: tests/plans/endless_loop.lua:3: plan stopped: it ran past its
-- An endless loop: stopped by the instruction budget or the 2 s wall-clock limit.
while true do end
return weft.plan {}
