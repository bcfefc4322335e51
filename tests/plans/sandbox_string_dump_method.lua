-- expect: tests/plans/sandbox_string_dump_method.lua:4: attempt to call a nil value (field 'dump')
-- The same function must not be reachable through the strings' metatable
-- (("").dump is string.dump unless the host also filters the metatable's __index).
local bytes = ("").dump(weft.plan)
error("string.dump is reachable through (\"\").dump: it returned " .. #bytes .. " bytes")
