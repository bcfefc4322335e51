-- model_variable.lua: the model is a variable, which the importer cannot copy.
local w = weft
local m = w.gpt2 { layers = 2, hidden = 64, heads = 4, seq = 64, vocab = 256 }
return w.plan {
  model = m,
  batch = { micro = 1 },
  optimizer = w.adamw { lr = 1e-3 },
  data = { train = "data/x.bin" },
}
