-- model_tricky.lua: a model plan that the importer's text scan must read
-- correctly: decoys in comments and strings, a multi-line model with a
-- comment holding brackets and commas, and a last field without a comma.
-- model = w.bogus { } in a line comment
local w = weft
local note = "model = w.nope {"
--[[ model = w.gpt2 { layers = 99 } ]]
return w.plan {
  name = "tricky",
  model = w.gpt2 {
    layers = 2, hidden = 64,  -- a comment with }, { and ,
    heads = 4, seq = 64, vocab = 256,
  },
  batch = { micro = 1 },
  optimizer = w.adamw { lr = 1e-3 },
  data = { train = "data/tricky.bin" }  -- no comma after the last field
}
