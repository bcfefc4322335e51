-- expect: tests/plans/sandbox_collectgarbage.lua:3: attempt to call a nil value (global 'collectgarbage')
-- collectgarbage is not available (it could stop the collector and defeat the memory cap).
collectgarbage("stop")
return weft.plan {}
