-- expect: tests/plans/nccl_ifname_shell.lua:4: nccl.socket_ifname: "eth0;reboot" is not a list of names (valid: names like "eth0" or "mlx5_0:1,mlx5_1", "^" (exclude) or "=" (exact) first)
-- Shell text in an interface name.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = "data/synth.bin" },
  nccl = { socket_ifname = "eth0;reboot" },
}
