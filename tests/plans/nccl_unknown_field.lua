-- expect: tests/plans/nccl_unknown_field.lua:4: nccl.algoo: unknown field (did you mean 'algo'?) (valid: algo, buffsize, cross_nic, debug, debug_subsys, ib_disable, ib_hca, max_nchannels, min_nchannels, net_gdr_level, nthreads, nvls_enable, p2p_disable, p2p_level, proto, shm_disable, socket_ifname)
-- A misspelt NCCL setting.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  nccl = { algoo = "Ring" },
}
