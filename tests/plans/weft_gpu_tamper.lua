-- expect: tests/plans/weft_gpu_tamper.lua:6: cluster.device.fp32: 0 is not above 0 (valid: a number > 0)
-- weft.gpu is the plan's to read (and to edit), but what reaches the compiler is checked:
-- a peak of 0 FLOP/s would divide by zero in the reports.
local w = weft
w.gpu.H100_SXM.fp32 = 0
local c = w.cluster { nodes = 1, devices_per_node = 8, device = w.gpu.H100_SXM }
