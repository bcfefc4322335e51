-- expect: tests/plans/sandbox_io_open.lua:3: attempt to index a nil value (global 'io')
-- io is not available to plans.
local f = io.open("/etc/passwd")
return weft.plan {}
