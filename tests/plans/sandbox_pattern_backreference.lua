-- expect: tests/plans/sandbox_pattern_backreference.lua:5: plan stopped: it ran past its limit of 2 s of CPU time inside string.gmatch's iterator
-- A back-reference: for each start, every capture length, and a comparison
-- as long as the capture; the matching runs in gmatch's iterator.
local s = string.rep("a", 100000)
for w in s:gmatch("(.-)%1b") do end
return weft.plan {}
