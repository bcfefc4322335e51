-- expect: tests/plans/sandbox_os_execute.lua:3: attempt to index a nil value (global 'os')
-- os is not available to plans.
os.execute("touch /tmp/weft-sandbox-escaped")
return weft.plan {}
