-- expect: tests/plans/sandbox_pcall.lua:4: attempt to call a nil value (global 'pcall')
-- pcall is withheld: with it a plan could catch and ignore the sandbox's stops.
local function spin() while true do end end
pcall(spin)
return weft.plan {}
