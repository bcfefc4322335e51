-- expect: tests/plans/string_bomb.lua:5: plan stopped: it allocated more than the sandbox's 256 MiB
-- Repeated string doubling: the cap is hit after a handful of instructions.
local s = "weft"
while true do
  s = s .. s
end
