-- expect: tests/plans/data_path_injection.lua:4: data.train: "data/x.bin\"; int injected = 1; //" cannot be written into the generated C program (valid: a path of 1 .. 511 printable characters without '"', '\' or '??')
-- The data path becomes a C string literal in stage0.c: a quote would end it.
local w = weft
return w.plan {
  model = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 },
  batch = { micro = 8 },
  optimizer = w.adamw { lr = 3e-3 },
  data = { train = 'data/x.bin"; int injected = 1; //' },
}
