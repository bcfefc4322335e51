-- expect: tests/plans/table_bomb.lua:7: plan stopped: it allocated more than the sandbox's 256 MiB
-- A table that grows forever: stopped by the memory cap.  Each entry holds a 4 KiB
-- string of its own, so the cap comes long before the 2 s CPU limit, even on a loaded
-- machine (one-element tables took 1.4 s to fill 256 MiB).
local t, n, pad = {}, 0, ("x"):rep(4096)
while true do
  n = n + 1; t[n] = { n, pad .. n }
end
