-- expect: tests/plans/nccl_algo_unknown.lua:4: nccl.algo: "Rign" is not an NCCL algorithm (valid: Ring, Tree, CollnetDirect, CollnetChain, NVLS, NVLSTree, PAT; a comma-separated list, "^" first to exclude)
-- An algorithm NCCL does not have.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  nccl = { algo = "Ring,Rign" },
}
