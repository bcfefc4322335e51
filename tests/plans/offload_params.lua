-- expect: tests/plans/offload_params.lua:4: offload.params: "cpu" needs zero = 3 (only sharded parameters move to the host) (valid: "none", or zero = 3)
-- Only ZeRO-3 partitions parameters, and only partitioned parameters can move to the host.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2 },
  offload = { optimizer = "cpu", params = "cpu" },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
