-- expect: tests/plans/syntax_error.lua:4: unexpected symbol near '='
-- A Lua syntax error: the compiler must name the file and line, not crash.
local w = weft
local micro = = 8
return w.plan {}
