-- expect: tests/plans/sandbox_debug_getinfo.lua:3: attempt to index a nil value (global 'debug')
-- debug is not available: it would reach upvalues, the registry and hooks.
local info = debug.getinfo(1)
return weft.plan {}
