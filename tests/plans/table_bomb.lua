-- expect: tests/plans/table_bomb.lua:5: plan stopped: it allocated more than the sandbox's 256 MiB
-- A table that grows forever: stopped by the memory cap.
local t, n = {}, 0
while true do
  n = n + 1; t[n] = { n }
end
