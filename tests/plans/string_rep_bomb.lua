-- expect: tests/plans/string_rep_bomb.lua:3: plan stopped: it allocated more than the sandbox's 256 MiB
-- One call asks for 1 GiB, four times the cap.
local s = ("x"):rep(1 << 30)
return weft.plan {}
