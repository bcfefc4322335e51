-- expect: tests/plans/weft_escape_search.lua:27: sandbox held: nothing dangerous is reachable from weft
-- Walk everything reachable from weft and from what it returns, looking for a way
-- to io, os, debug, load, require or the registry.
local w = weft
local suspicious = { io = 1, os = 1, debug = 1, load = 1, loadstring = 1, dofile = 1,
  loadfile = 1, require = 1, package = 1, execute = 1, popen = 1, open = 1,
  getregistry = 1, getupvalue = 1, setupvalue = 1, sethook = 1, dump = 1,
  setmetatable = 1, getmetatable = 1, rawset = 1, collectgarbage = 1, pcall = 1 }
local seen, found = {}, {}
local function walk(t, path)
  if seen[t] then return end
  seen[t] = true
  for k, v in pairs(t) do
    if suspicious[k] then found[#found + 1] = path .. "." .. tostring(k) end
    if type(v) == "table" then walk(v, path .. "." .. tostring(k)) end
  end
end
walk(w, "weft")
local g = w.graph { seq = 4, vocab = 4 }
walk(g, "graph")
walk({ g.__index, g.param, g.__metatable }, "graph.internals")
walk(w.gpt2 { layers = 1, hidden = 8, heads = 1, seq = 8, vocab = 8 }, "model")
walk(w.adamw { lr = 1e-3 }, "optimizer")
walk(w.cluster {}, "cluster")
if #found > 0 then error("reachable: " .. table.concat(found, ", ")) end
if type(_G.weft) ~= "table" or _G.io or _G.os then error("the environment changed") end
error("sandbox held: nothing dangerous is reachable from weft")
