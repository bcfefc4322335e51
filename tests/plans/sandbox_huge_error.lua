-- expect: tests/plans/sandbox_huge_error.lua:3: xxxxxxxxxx
-- A 32 MiB error message: printed cut to 4 KiB, ending in "(truncated)".
error(string.rep("x", 32 << 20))
