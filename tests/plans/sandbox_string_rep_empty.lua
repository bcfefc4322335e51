-- expect: tests/plans/sandbox_string_rep_empty.lua:3: plan stopped: string.rep of 9223372036854775807 copies would run past the plan's budget
-- "" repeated allocates nothing, so the memory cap never stops it; the budget does.
local s = string.rep("", math.maxinteger)
return weft.plan {}
