-- expect: tests/plans/sandbox_setmetatable.lua:3: attempt to call a nil value (global 'setmetatable')
-- setmetatable is not available: a plan could otherwise hide code in __index or __gc.
local t = setmetatable({}, { __gc = function() end })
return weft.plan {}
