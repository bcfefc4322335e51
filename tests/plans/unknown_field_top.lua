-- expect: tests/plans/unknown_field_top.lua:4: plan.optimiser: unknown field (did you mean 'optimizer'?) (valid: batch, buckets, clip_grad_norm, cluster, comm, data, dp_comm, fault, grad_accum, lmhead_chunk, loss_scale, mesh, model, name, nccl, offload, optimizer, param_storage, pipeline, precision, recompute, tp_comm, train, zero, zero_prefetch, zero_prefetch_mb)
-- A misspelt top-level field.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimiser = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
}
