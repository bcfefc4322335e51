-- expect: tests/plans/zero_pipedream.lua:5: offload.params: "cpu" with pipedream-2bw is not supported yet by this version of weft (valid: "none")
-- PipeDream-2BW under ZeRO-3 keeps each weight version as a parameter shard on
-- the device; offloading both shards to the host is not built.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 4, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  mesh = { dp = 2, pp = 2 },
  pipeline = { schedule = "pipedream-2bw" },
  zero = 3,
  offload = { params = "cpu" },
  batch = { micro = 2, global = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
