-- expect: tests/plans/memory_then_error.lua:7: gpt2.heads: 5 does not divide hidden = 64
-- Big temporary strings make Lua collect garbage in an emergency and carry on; the plan's
-- real mistake, later, must be reported as itself and not as running out of memory.
for i = 1, 3 do
  local s = ("x"):rep(100 * 1024 * 1024)
end
local m = weft.gpt2 { layers = 2, hidden = 64, heads = 5, seq = 64, vocab = 256 }
