-- expect: tests/plans/sandbox_deep_table.lua:7: plan stopped: stack overflow (nested too deeply
-- A table nested 300000 deep where weft.plan copies the plan (pipeline.stages
-- is checked by its length and entries only): weft's copy runs out of stack.
local deep, at = {}, nil
at = deep
for i = 1, 300000 do at.x = {}; at = at.x end
return weft.plan {
  model = weft.gpt2 { layers = 4, hidden = 128, heads = 4, seq = 128, vocab = 256 },
  cluster = weft.cluster { nodes = 1, devices_per_node = 2, device = weft.gpu.CPU },
  mesh = { dp = 2 },
  batch = { micro = 8, global = 16 },
  optimizer = weft.adamw { lr = 3e-3 },
  pipeline = { stages = { 4, deep = deep } },
  data = { train = "data/synth.bin" },
}
