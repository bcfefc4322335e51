-- expect: tests/plans/sandbox_dofile.lua:3: attempt to call a nil value (global 'dofile')
-- dofile is not available: plans cannot read other files.
dofile("/etc/passwd")
return weft.plan {}
