-- expect: tests/plans/memory_then_error.lua:10: gpt2.heads: 5 does not divide hidden = 64
-- Big temporary strings make Lua collect garbage in an emergency and carry on; the plan's
-- real mistake, later, must be reported as itself and not as running out of memory.
-- (1 KiB repeated, not one byte: string.rep copies its pattern once per repetition,
-- and 3 x 100 M one-byte copies took most of the 2 s CPU limit)
local kib = ("x"):rep(1024)
for i = 1, 3 do
  local s = kib:rep(100 * 1024)
end
local m = weft.gpt2 { layers = 2, hidden = 64, heads = 5, seq = 64, vocab = 256 }
