-- expect: tests/plans/sandbox_pattern_backtrack.lua:5: plan stopped: it ran past its limit of 2 s of CPU time inside string.find
-- A pattern that backtracks: each ".-" tries every length, so one call does
-- about n^4 / 24 steps inside C, where the instruction hook never runs.
local s = string.rep("a", 5000)
local at = s:find(".-.-.-.-b")
return weft.plan {}
