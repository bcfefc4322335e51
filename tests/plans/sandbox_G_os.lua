-- expect: tests/plans/sandbox_G_os.lua:3: attempt to index a nil value (field 'os')
-- _G is the plan's own environment, not the host's globals.
_G.os.execute("touch /tmp/weft-sandbox-escaped")
return weft.plan {}
