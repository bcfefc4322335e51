-- expect: tests/plans/returns_number.lua:4: the plan must end with `return weft.plan { ... }`
-- A plan that returns something other than weft.plan { ... } (here a number).
local answer = 42
return answer
