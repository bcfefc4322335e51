-- expect: tests/plans/sandbox_load.lua:3: attempt to call a nil value (global 'load')
-- load is not available: no compiling code (or bytecode) at run time.
local f = load("return os")
return weft.plan {}
