-- expect: tests/plans/sandbox_rawset_G.lua:3: attempt to call a nil value (global 'rawset')
-- rawset is not available (and _G is only the plan's own environment).
rawset(_G, "os", {})
return weft.plan {}
