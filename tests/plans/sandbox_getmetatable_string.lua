-- expect: tests/plans/sandbox_getmetatable_string.lua:3: attempt to call a nil value (global 'getmetatable')
-- getmetatable("") would hand out the host's real string library.
local mt = getmetatable("")
mt.__index.dump = nil
return weft.plan {}
