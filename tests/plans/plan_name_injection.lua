-- expect: tests/plans/plan_name_injection.lua:5: plan.name: "x\nrm -rf \"$HOME/weft-test-must-not-exist\"\n#" is not a plain name (it is written into generated C, CMake and shell files) (valid: letters, digits, '_' and '-', starting with a letter or '_', at most 64 characters)
-- The name is written into launch.sh, CMakeLists.txt and C comments: a newline would
-- let the plan add its own shell commands to launch.sh.
local w = weft
return w.plan {
  name = "x\nrm -rf \"$HOME/weft-test-must-not-exist\"\n#",
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
