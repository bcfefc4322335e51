-- expect: tests/plans/sandbox_string_dump.lua:3: attempt to call a nil value (field 'dump')
-- string.dump is removed from the plan's string table.
local bytes = string.dump(weft.plan)
return weft.plan {}
