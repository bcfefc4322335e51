-- expect: tests/plans/sandbox_table_sort.lua:5: plan stopped: table.sort of 4000000 elements would run past the plan's budget
-- Sorting a huge table is one C call: its n log n comparisons are charged first.
local t = {}
for i = 1, 4000000 do t[i] = -i end
table.sort(t)
return weft.plan {}
