-- expect: tests/plans/sandbox_require.lua:3: attempt to call a nil value (global 'require')
-- require (and package) are not available: no loading C modules.
local os = require("os")
return weft.plan {}
