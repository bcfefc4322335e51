-- expect: tests/plans/forged_plan.lua:14: the plan must end with `return weft.plan { ... }`
-- A table dressed up as a plan skips every check in weft.plan (here: zero ranks,
-- and a name that would add a command to launch.sh).
local w = weft
local forged = {
  __kind = "plan", name = "forged\ntouch weft-forged-plan-ran\n#", world = 0,
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 0, tp = 1, pp = 1 }, cluster = w.cluster {},
  batch = { micro = 8, global = 8, accum = 1 }, optimizer = w.adamw { lr = 3e-3 },
  clip_grad_norm = 1, precision = "fp32", zero = 0, buckets = { mb = 1 },
  train = { steps = 1, log_every = 1, ckpt_every = 0, seed = 1 },
  data = { train = "data/synth.bin" },
}
return forged
