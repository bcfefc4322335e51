-- The weft library seen by plans.  Runs once per compile, before the plan, in a
-- state the host has sandboxed; it keeps debug.getinfo for itself so that every
-- error can name the plan's file:line, and hands the plan only `weft`.
--
-- Chunk arguments: the plan's chunk name ("@path"), a table of overrides
-- ("mesh.dp" -> "4") from `weft compile --set`, and the host's mesh module
-- (compiler/mesh_lua.c): the mesh axes { name =, max = }, the default order
-- and layout(order, sizes), the mesh.order parser the compiler and the
-- runtime share.
--
-- The plan is untrusted: it can read and write every table it is handed, and
-- it can build tables that look like ours.  So the library never reads its
-- own functions or data back through tables the plan can reach (it keeps them
-- in locals), and weft.plan rebuilds every model, optimizer and cluster from a
-- private copy of the spec it was made from, rejecting look-alikes.
local PLAN_SOURCE, OVERRIDES, MESH = ...
local getinfo, registry = debug.getinfo, debug.getregistry()
-- The plan's environment shares the math and table libraries with ours (the
-- host copies only string), so a plan could replace math.type and switch the
-- checks off.  Everything we use is taken now, before the plan runs.
local floor, huge, mtype, mmin, sqrt, tointeger =
  math.floor, math.huge, math.type, math.min, math.sqrt, math.tointeger
local concat, sort, fmt = table.concat, table.sort, string.format

-- What plans see as `weft`: an empty table whose metatable serves `api` (see
-- the end of this file), so that looking up weft.plan can note the plan's line.
local api = { version = WEFT_VERSION }

---------------------------------------------------------------------------
-- Diagnostics: every error names the plan's file:line, the field and what
-- would be valid.
---------------------------------------------------------------------------
-- The full path, not Lua's short_src (which cuts long paths to "...tail").
local PLAN_PATH = (PLAN_SOURCE:gsub("^@", ""))

local entry_name = setmetatable({}, { __mode = "k" })  -- public function -> its name
local looked_up = {}  -- name -> plan line where the plan last looked weft.<name> up

-- The plan's current line, searching the stack from `level` outwards.  A plan
-- usually ends with `return weft.plan { ... }`, a tail call: Lua then drops
-- the plan's frame, so the stack no longer says where the plan is.  For an
-- entry point called that way we use the line where the plan looked it up.
local function plan_line(level)
  while true do
    local info = getinfo(level, "Slft")
    if not info then return nil end
    if info.source == PLAN_SOURCE then return info.currentline end
    local name = entry_name[info.func]
    if name and info.istailcall and looked_up[name] then return looked_up[name] end
    level = level + 1
  end
end

local function where()
  return PLAN_PATH .. ":" .. (plan_line(3) or 0)
end

local function fail(field, problem, valid)
  local msg = where() .. ": " .. field .. ": " .. problem
  if valid then msg = msg .. " (valid: " .. valid .. ")" end
  error(msg, 0)
end

local function show(v)
  if type(v) == "string" then
    -- %q writes a newline as backslash-newline; keep messages on one line
    return (fmt("%q", v):gsub("\\\n", "\\n"))
  end
  if v ~= v then return "nan" end  -- printf says "-nan" on some systems
  if mtype(v) == "float" and v == floor(v) and v < 2^53 and v > -2^53 then
    return fmt("%.1f", v)
  end
  return tostring(v)
end

local function kind_of(t) return type(t) == "table" and rawget(t, "__kind") or nil end

-- "a model", "an optimizer"
local function article(word) return (word:find("^[aeiou]") and "an " or "a ") .. word end

-- "string \"2\"", "number 64.5", "nil", "a table", "a model"
local function describe(v)
  if v == nil then return "nil" end
  if type(v) == "table" then return article(kind_of(v) or "table") end
  if type(v) ~= "string" and type(v) ~= "number" and type(v) ~= "boolean" then return article(type(v)) end
  return type(v) .. " " .. show(v)
end

local function edit_distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = mmin(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  sort(keys)
  return keys
end

-- A copy of plain data (tables of tables, no metatables), cycles included.
local function copy(v, seen)
  if type(v) ~= "table" then return v end
  seen = seen or {}
  if seen[v] then return seen[v] end
  local c = {}
  seen[v] = c
  for k, x in next, v do c[copy(k, seen)] = copy(x, seen) end
  return c
end

---------------------------------------------------------------------------
-- Schema checking.  A schema maps each field to a rule:
--   { "integer"|"number"|"string"|"boolean"|"table", min=, max=, one_of={..},
--     default=, required=true, valid=, check=function(v) -> problem, valid }
---------------------------------------------------------------------------
local LIMIT = (1 << 31) - 1  -- sizes that reach the C side must fit an int (an integer: 2^31 is a float)
-- What one compile handles in seconds: ranks (ranks.txt, groups), microbatches
-- a step, and forward steps in the whole pipeline schedule.
local MAX_RANKS, MAX_MICROBATCHES, MAX_SCHEDULE = 1 << 18, 1 << 14, 1 << 18

-- A limit as written in a message: 1e6 as "1000000", not "1e+06" or "1000000.0".
local function limit(x)
  if mtype(x) == "float" and x == floor(x) and x < 2^53 and x > -2^53 then return fmt("%d", x) end
  return tostring(x)
end

-- "1 .. 1024", ">= 0"
local function bounds(rule)
  if rule.min and rule.max then return limit(rule.min) .. " .. " .. limit(rule.max) end
  if rule.min then return ">= " .. limit(rule.min) end
  if rule.max then return "<= " .. limit(rule.max) end
end

-- "an integer in 1 .. 1024", "a number >= 0"
local function range_text(rule, what)
  local b = bounds(rule)
  if not b then return what end
  return what .. (rule.min and rule.max and " in " or " ") .. b
end

local function check_value(field, v, rule)
  local want = rule[1]
  if want == "integer" then
    if mtype(v) ~= "integer" then
      -- 64.0 is accepted as 64; 1e300 or inf is integral too, but only the
      -- range checks below can say what is wrong with it.
      if type(v) ~= "number" or v ~= floor(v) then
        fail(field, "expected an integer, got " .. describe(v), range_text(rule, "an integer"))
      end
      if v >= -LIMIT and v <= LIMIT then v = floor(v) end
    end
  elseif want == "number" then
    if type(v) ~= "number" or v ~= v or v == huge or v == -huge then
      fail(field, "expected a finite number, got " .. describe(v), range_text(rule, "a number"))
    end
  elseif want ~= "any" and type(v) ~= want then
    local valid = rule.valid or (rule.one_of and concat(rule.one_of, ", ")) or ("a " .. want)
    fail(field, "expected a " .. want .. ", got " .. describe(v), valid)
  end
  if rule.min and v < rule.min then
    fail(field, show(v) .. " is below the minimum " .. limit(rule.min), bounds(rule))
  end
  if rule.max and v > rule.max then
    fail(field, show(v) .. " is above the maximum " .. limit(rule.max), bounds(rule))
  end
  if rule.one_of then
    local ok = false
    for _, o in ipairs(rule.one_of) do if o == v then ok = true end end
    if not ok then
      fail(field, show(v) .. " is not a known value", concat(rule.one_of, ", "))
    end
  end
  if rule.check then
    local problem, valid = rule.check(v)
    if problem then fail(field, problem, valid) end
  end
  return v
end

-- Checks table `t` (named `what` in messages) against `schema`; returns a new
-- table with defaults filled in.
local function check_fields(what, t, schema)
  if type(t) ~= "table" then
    fail(what, "expected a table, got " .. describe(t), "a table { ... }")
  end
  for k, v in pairs(t) do
    -- __kind is weft's own mark on the tables its constructors make; any
    -- other name, "__"-prefixed or not, must be in the schema
    if k ~= "__kind" then
      if type(k) ~= "string" then
        -- { 2, layers = 2 }: a value without a name
        fail(what .. "[" .. show(k) .. "]", "unexpected positional value " .. describe(v)
             .. "; fields must be named", concat(sorted_keys(schema), ", "))
      elseif not schema[k] then
        local names = sorted_keys(schema)
        local best, best_d = nil, 3
        for _, n in ipairs(names) do
          local d = edit_distance(k, n)
          if d < best_d then best, best_d = n, d end
        end
        local hint = best and (" (did you mean '" .. best .. "'?)") or ""
        fail(what .. "." .. k, "unknown field" .. hint, concat(names, ", "))
      end
    end
  end
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  for k, rule in pairs(schema) do
    local v = t[k]
    if v == nil then
      if rule.required then
        fail(what .. "." .. k, "is required", rule.valid or article(rule[1]))
      end
      out[k] = rule.default
    else
      out[k] = check_value(what .. "." .. k, v, rule)
    end
  end
  return out
end

local function require_kind(field, v, kind, ctor)
  if kind_of(v) ~= kind then
    fail(field, "expected " .. article(kind) .. ", got " .. describe(v), ctor)
  end
  return v
end

local function divisors(n)
  local d = {}
  for i = 1, mmin(n, 4096) do if n % i == 0 then d[#d + 1] = i end end
  if #d > 8 then d = { d[1], d[2], d[3], d[4], "...", d[#d - 1], d[#d] } end
  return concat(d, ", ")
end

-- Strings that end up inside generated C, CMake and shell files must not be
-- able to close a string or comment there (or start a new line): a plan name
-- like "x\nrm -rf ~" would otherwise run from launch.sh.
local NAME_VALID = "letters, digits, '_' and '-', starting with a letter or '_', at most 64 characters"
local function plain_name(v)
  if #v > 64 or not v:find("^[%a_][%w_%-]*$") then
    return show(v) .. " is not a plain name (it is written into generated C, CMake and shell files)",
           NAME_VALID
  end
end

local PATH_VALID = "a path of 1 .. 511 printable characters without '\"', '\\' or '??'"
local function plain_path(v)
  if #v == 0 or #v > 511 or v:find('[%c"\\]') or v:find("??", 1, true) then
    return show(v) .. " cannot be written into the generated C program", PATH_VALID
  end
end

---------------------------------------------------------------------------
-- Entry points: the functions a plan can call through `weft`.
---------------------------------------------------------------------------
local function entry(name, f)
  entry_name[f] = name
  return f
end

-- Objects made by the constructors: object -> { kind, make, spec }, where
-- spec is a private copy of what the plan passed.  weft.plan rebuilds each
-- object from it, so editing the object afterwards has no effect, and a
-- table that merely carries __kind = "model" is refused.
local made = setmetatable({}, { __mode = "k" })

-- While a constructor runs for the plan, models defer their graph (see
-- model_object); weft.plan's rebuild makes it at once.
local defer_graphs = false

local function constructor(name, kind, make)
  return entry(name, function(spec)
    defer_graphs = true
    local obj = make(spec)
    defer_graphs = false
    -- the plan line of the call, which weft.plan's rebuild keeps (load.c
    -- gives it to every op of a model: shape errors then name it)
    local line = plan_line(2) or 0
    obj.line = line
    made[obj] = { kind = kind, make = make, spec = copy(spec), line = line }
    return obj
  end)
end

---------------------------------------------------------------------------
-- The model graph: primitives append parameters and operations to a graph;
-- model families are written with them.  The compiler derives the backward
-- pass, the parallel roles' collectives and the memory plan from this list.
---------------------------------------------------------------------------
local Graph = {}
-- Graph itself stays private: were it also the metatable (Graph.__index =
-- Graph), a plan could reach it as g.__index and replace the primitives that
-- weft.gpt2 builds with.  __metatable marks graphs in a way plans cannot copy.
local GRAPH = "weft.graph"
local GraphMT = { __index = Graph, __metatable = GRAPH }

local function new_graph(spec)
  spec = check_fields("graph", spec or {}, {
    seq = { "integer", min = 1, max = 1 << 20, required = true },
    vocab = { "integer", min = 2, max = 1 << 24, required = true },
  })
  return setmetatable({ __kind = "graph", seq = spec.seq, vocab = spec.vocab,
                        params = {}, ops = {}, n_tensors = 0, names = {}, inputs = {},
                        n_blocks = 0, hf_constants = {} }, GraphMT)
end

-- The primitives are public, so they check what a plan passes them: a Lua
-- error inside them would name weft/prelude.lua instead of the plan.
local function is_tensor(x)
  return type(x) == "table" and mtype(x.id) == "integer" and mtype(x.width) == "integer"
end

local function need(method, self, args)
  if getmetatable(self) ~= GRAPH then
    fail("graph:" .. method, "called on " .. describe(self) .. ", not on a graph",
         "g:" .. method .. "(...) where g = weft.graph { seq = ..., vocab = ... }")
  end
  for i = 1, #args, 3 do
    local name, want, v = args[i], args[i + 1], args[i + 2]
    local ok
    if want == "tensor" then ok = is_tensor(v)
    elseif want == "integer" then ok = mtype(v) == "integer"
    else ok = type(v) == want end
    if not ok then
      fail("graph:" .. method, name .. " must be " .. article(want) .. ", got " .. describe(v),
           want == "tensor" and "a tensor returned by another primitive of this graph" or nil)
    end
  end
end

-- layout: how checkpoints store the parameter.  nil: as weft holds it;
-- "transposed": a matrix weft holds (in, out) stored (out, in), as Hugging
-- Face's nn.Linear weights are (LLaMA's projections).
function Graph:param(name, shape, init, std, decay, layout)
  need("param", self, { "name", "string", name, "shape", "table", shape })
  if self.names[name] then fail("graph:param", "parameter " .. name .. " defined twice", "a name not used before in this graph") end
  for i, s in ipairs(shape) do
    if mtype(s) ~= "integer" or s < 1 or s > LIMIT then
      fail(name, "dimension " .. i .. " is " .. show(s), "an integer in 1 .. " .. LIMIT)
    end
  end
  -- "qkv": a fused q|k|v projection's weight or bias, saved as three tensors
  -- (its name's "qkv_proj" read as q_proj, k_proj, v_proj), a weight (out, in)
  local dims_ok = layout == "transposed" and #shape == 2
                  or layout == "qkv" and (#shape == 1 or #shape == 2) and shape[#shape] % 3 == 0
  if layout ~= nil and not (dims_ok and (layout ~= "qkv" or name:find("qkv_proj", 1, true))) then
    fail(name, "layout " .. show(layout) .. ((layout == "transposed" or layout == "qkv") and not dims_ok
                                             and " of a " .. #shape .. "-dimensional parameter" or ""),
         "nil, \"transposed\" for a matrix, or \"qkv\" for a qkv_proj weight or bias")
  end
  self.names[name] = true
  self.params[#self.params + 1] = { name = name, shape = shape, init = init,
                                    std = std or 0, decay = decay, layout = layout }
  return name
end

-- A tensor of Hugging Face's model that Weft's does not compute with, saved
-- in every checkpoint so that transformers finds all its weights, and not
-- read back: `value` throughout (a number), or a copy of the parameter named
-- `value` (of the same shape).  SigLIP's post_layernorm (LLaVA reads the
-- encoder's features before it); the patch convolution's bias (Weft folds it
-- into the position embedding, so the convolution's own is 0); LLaVA's
-- lm_head over a GPT-2, whose tied head LLaVA cannot tie.
function Graph:hf_constant(name, shape, value)
  need("hf_constant", self, { "name", "string", name, "shape", "table", shape })
  if type(value) == "string" then
    local src
    for _, q in ipairs(self.params) do if q.name == value then src = q end end
    if not src or #src.shape ~= #shape or src.shape[1] ~= shape[1] or src.shape[#shape] ~= shape[#shape] then
      fail("graph:hf_constant", "value " .. show(value) .. " is not a parameter of the shape given",
           "a number, or the name of a parameter defined before, of the same shape")
    end
  elseif mtype(value) == nil then
    fail("graph:hf_constant", "value " .. show(value), "a number, or a parameter's name")
  end
  if self.names[name] then fail("graph:hf_constant", name .. " is already a parameter or constant", "a new name") end
  if #shape < 1 or #shape > 4 then
    fail(name, "shape has " .. #shape .. " dimensions", "1 to 4 dimensions")
  end
  local numel = 1
  for i, s in ipairs(shape) do
    if mtype(s) ~= "integer" or s < 1 or s > LIMIT then
      fail(name, "dimension " .. i .. " is " .. show(s), "an integer in 1 .. " .. LIMIT)
    end
    numel = numel * s
    if numel > LIMIT then fail(name, "shape of " .. show(numel) .. "+ elements", "at most " .. LIMIT .. " elements") end
  end
  self.names[name] = true
  self.hf_constants[#self.hf_constants + 1] = { name = name, shape = shape, value = value }
end

function Graph:tensor(width)
  need("tensor", self, { "width", "integer", width })
  self.n_tensors = self.n_tensors + 1
  return { id = self.n_tensors, width = width }
end

function Graph:op(kind, inputs, params, width, attrs)
  need("op", self, { "kind", "string", kind, "inputs", "table", inputs, "params", "table", params })
  local out = self:tensor(width)
  local op = { op = kind, inputs = inputs, params = params, out = out.id, width = width,
               layer = self.block_now }
  for k, v in pairs(attrs or {}) do op[k] = v end
  self.ops[#self.ops + 1] = op
  return out
end

-- Structure the compiler reads instead of parameter names: g:block(n) starts
-- transformer block n (0, 1, ... in order), whose ops the pipeline keeps
-- together on one stage; g:block(nil) ends the blocks (the ops after it, like
-- those before block 0, belong to none).  Each op records its block as `layer`.
function Graph:block(n)
  need("block", self, {})
  if n == nil then self.block_now = nil return end
  if mtype(n) ~= "integer" or n ~= self.n_blocks then
    fail("graph:block", "block " .. show(n) .. " out of order", "the next block, " .. self.n_blocks)
  end
  self.n_blocks = n + 1
  self.block_now = n
end

-- The model's inputs, by kind: "tokens" (uint16 token ids, with the next
-- token as the target).  "image_patches" will join it.
local INPUT_KINDS = { tokens = true }
function Graph:input(spec)
  need("input", self, { "spec", "table", spec })
  if not INPUT_KINDS[spec.kind] then
    fail("graph:input", "kind " .. show(spec.kind) .. " is not an input weft reads", "\"tokens\"")
  end
  self.inputs[#self.inputs + 1] = { kind = spec.kind }
end

local function ids(list)
  local r = {}
  for i, t in ipairs(list) do r[i] = t.id end
  return r
end

function Graph:embedding(prefix_tok, prefix_pos, dim, std)
  need("embedding", self, { "prefix_tok", "string", prefix_tok, "prefix_pos", "string", prefix_pos,
                            "dim", "integer", dim, "std", "number", std })
  local wte = self:param(prefix_tok .. ".weight", { self.vocab, dim }, "normal", std, 1)
  local wpe = self:param(prefix_pos .. ".weight", { self.seq, dim }, "normal", std / 2, 1)
  self.tied = wte
  return self:op("embed", {}, { wte, wpe }, dim)
end

function Graph:layernorm(x, prefix)
  need("layernorm", self, { "x", "tensor", x, "prefix", "string", prefix })
  local w = self:param(prefix .. ".weight", { x.width }, "ones", 0, 0)
  local b = self:param(prefix .. ".bias", { x.width }, "zeros", 0, 0)
  return self:op("layernorm", ids { x }, { w, b }, x.width)
end

-- parallel: "column" splits the output features across tensor-parallel ranks,
-- "row" splits the input features (its partial sums are all-reduced).
-- bias = false leaves the bias out (LLaMA's projections); layout is the
-- weight's checkpoint layout (Graph:param).
function Graph:linear(x, prefix, out_features, parallel, std, bias, layout)
  need("linear", self, { "x", "tensor", x, "prefix", "string", prefix,
                         "out_features", "integer", out_features })
  local w = self:param(prefix .. ".weight", { x.width, out_features }, "normal", std or 0.02, 1, layout)
  if bias == false then
    return self:op("linear", ids { x }, { w }, out_features, { parallel = parallel })
  end
  local b = self:param(prefix .. ".bias", { out_features }, "zeros", 0, 0, layout == "qkv" and "qkv" or nil)
  return self:op("linear", ids { x }, { w, b }, out_features, { parallel = parallel })
end

-- prefix: positions 0 .. prefix-1 see each other both ways (a vision
-- encoder's bidirectional attention); nil or 0: causal.
function Graph:attention(qkv, heads, prefix)
  need("attention", self, { "qkv", "tensor", qkv, "heads", "integer", heads })
  if qkv.width % 3 ~= 0 then fail("graph:attention", "input width " .. qkv.width .. " must hold q, k and v",
                                   "a tensor whose width is a multiple of 3") end
  if prefix ~= nil and (mtype(prefix) ~= "integer" or prefix < 0 or prefix > self.seq) then
    fail("graph:attention", "prefix " .. show(prefix) .. " is not a number of positions", "0 .. " .. self.seq)
  end
  return self:op("attention", ids { qkv }, {}, qkv.width // 3, { heads = heads, prefix = prefix })
end

-- + a learned position embedding [seq, width] (a GPT-2 VLM adds it after the
-- image rows are merged in, as transformers' GPT-2 inside LLaVA does).
function Graph:position_add(x, prefix, std)
  need("position_add", self, { "x", "tensor", x, "prefix", "string", prefix, "std", "number", std })
  local wpe = self:param(prefix .. ".weight", { self.seq, x.width }, "normal", std, 1)
  return self:op("pos_add", ids { x }, { wpe }, x.width)
end

-- The token embedding alone (no position embedding: LLaMA rotates q and k).
function Graph:token_embedding(prefix, dim, std)
  need("token_embedding", self, { "prefix", "string", prefix, "dim", "integer", dim, "std", "number", std })
  local wte = self:param(prefix .. ".weight", { self.vocab, dim }, "normal", std, 1)
  return self:op("embed", {}, { wte }, dim)
end

function Graph:rmsnorm(x, prefix, eps)
  need("rmsnorm", self, { "x", "tensor", x, "prefix", "string", prefix, "eps", "number", eps })
  local w = self:param(prefix .. ".weight", { x.width }, "ones", 0, 0)
  return self:op("rmsnorm", ids { x }, { w }, x.width, { eps = eps })
end

-- Rotary position embedding of q (heads) and k (kv_heads); the output is the
-- rotated q and k side by side, which gqa_attention reads.
function Graph:rope(q, k, heads, kv_heads, theta)
  need("rope", self, { "q", "tensor", q, "k", "tensor", k, "heads", "integer", heads,
                       "kv_heads", "integer", kv_heads, "theta", "number", theta })
  if heads < 1 or kv_heads < 1 or q.width % heads ~= 0 or k.width * heads ~= q.width * kv_heads
     or (q.width // heads) % 2 ~= 0 then
    fail("graph:rope", "q (" .. q.width .. " wide, " .. heads .. " heads) and k (" .. k.width .. " wide, "
         .. kv_heads .. " heads) need heads of one even width", "heads dividing widths into an even head size")
  end
  return self:op("rope", ids { q, k }, {}, q.width + k.width, { heads = heads, kv_heads = kv_heads, theta = theta })
end

-- Causal attention with kv_heads key/value heads shared by groups of query
-- heads; qk comes from rope, v from the value projection.
function Graph:gqa_attention(qk, v, heads, kv_heads)
  need("gqa_attention", self, { "qk", "tensor", qk, "v", "tensor", v, "heads", "integer", heads,
                                "kv_heads", "integer", kv_heads })
  if kv_heads < 1 or heads % kv_heads ~= 0 or v.width % kv_heads ~= 0
     or qk.width ~= (heads + kv_heads) * (v.width // kv_heads) then
    fail("graph:gqa_attention", "qk (" .. qk.width .. ") and v (" .. v.width .. ") do not hold "
         .. heads .. " query and " .. kv_heads .. " key/value heads of one size",
         "kv_heads dividing heads, qk = (heads + kv_heads) * head size, v = kv_heads * head size")
  end
  return self:op("attention", ids { qk, v }, {}, heads * (v.width // kv_heads),
                 { heads = heads, kv_heads = kv_heads })
end

function Graph:swiglu(gate, up)
  need("swiglu", self, { "gate", "tensor", gate, "up", "tensor", up })
  if gate.width ~= up.width then fail("graph:swiglu", "widths differ: " .. gate.width .. " vs " .. up.width,
                                      "two tensors of the same width") end
  return self:op("swiglu", ids { gate, up }, {}, gate.width)
end

function Graph:gelu(x)
  need("gelu", self, { "x", "tensor", x })
  return self:op("gelu", ids { x }, {}, x.width)
end

-- The exact GELU, x Phi(x) (Hugging Face's activation_function = "gelu",
-- torch.nn.functional.gelu's default); Graph:gelu is the tanh form ("gelu_new").
function Graph:gelu_erf(x)
  need("gelu_erf", self, { "x", "tensor", x })
  return self:op("gelu_erf", ids { x }, {}, x.width)
end

function Graph:add(x, y)
  need("add", self, { "x", "tensor", x, "y", "tensor", y })
  if x.width ~= y.width then fail("graph:add", "widths differ: " .. x.width .. " vs " .. y.width,
                                  "two tensors of the same width") end
  return self:op("add", ids { x, y }, {}, x.width)
end

-- Logits against the (tied) token embedding, then cross-entropy with the
-- next-token targets; the output is the loss.
function Graph:lm_head_xent(x, weight)
  need("lm_head_xent", self, { "x", "tensor", x })
  return self:op("lmhead_xent", ids { x }, { weight or self.tied }, 1)
end

-- A VLM's image: the patch embedding of each sample's image (a convolution
-- of stride patch, weight [dim, channels, patch, patch] as PyTorch keeps it)
-- plus a learned position embedding [patches, dim] (the convolution's bias
-- folded in), into the sample's rows 0 .. patches-1; its other rows are 0.
-- image = { height =, width =, channels =, patch = } (the model's, weft.vlm).
function Graph:patch_embedding(prefix, image, dim, std)
  need("patch_embedding", self, { "prefix", "string", prefix, "image", "table", image, "dim", "integer", dim,
                                  "std", "number", std })
  local w = self:param(prefix .. ".patch_embedding.weight", { dim, image.channels, image.patch, image.patch },
                       "normal", std, 1)
  local pos = self:param(prefix .. ".position_embedding.weight", { image.positions, dim }, "normal", std, 0)
  return self:op("patch_embed", {}, { w, pos }, dim)
end

-- The hand-off: rows 0 .. patches-1 of each sample from image (the projected
-- patches), the others from text (the token embeddings).
function Graph:image_merge(text, image)
  need("image_merge", self, { "text", "tensor", text, "image", "tensor", image })
  if text.width ~= image.width then
    fail("graph:image_merge", "widths differ: " .. text.width .. " vs " .. image.width, "two tensors of the same width")
  end
  return self:op("image_merge", ids { text, image }, {}, text.width)
end

---------------------------------------------------------------------------
-- User kernels (weft.kernel, g:apply): an op whose forward and backward are
-- C functions in a file next to the plan.  The prelude checks the fields and
-- the path; the compiler (user_kernel_check.c) parses the file with libclang,
-- checks it against the kind's contract and proves its gradient.
---------------------------------------------------------------------------
-- kind -> tensor inputs of g:apply
local KERNEL_KINDS = { elementwise = 1, elementwise2 = 2, rowwise = 1 }
local kernels = {}  -- id -> private record { path, source, kind, forward, backward, params, line }
local PLAN_DIR = PLAN_PATH:match("^(.*)/[^/]*$") or "."

local function kernel_path(v)
  if v:sub(1, 1) == "/" then
    return show(v) .. " is an absolute path", "a path relative to the plan's folder"
  end
  for part in v:gmatch("[^/]+") do
    if part == ".." then return show(v) .. " leaves the plan's folder ('..')", "a path inside the plan's folder" end
  end
  if not v:find("%.c$") then return show(v) .. " is not a C file", "a file whose name ends in .c" end
  -- it is written into the generated program's comments
  if #v > 255 or not v:find("^[%w_%-%./]+$") then
    return show(v) .. " has characters other than letters, digits, '_', '-', '.' and '/'", "a plain relative path"
  end
end

local function c_name(v)
  if #v > 64 or not v:find("^[%a_][%w_]*$") then
    return show(v) .. " is not a C function name", "a C identifier of 1 .. 64 characters"
  end
  if v:find("^wf_") then return show(v) .. " uses weft's prefix wf_", "a name not starting with wf_" end
end

local function make_kernel(spec)
  local s = check_fields("kernel", spec, {
    source = { "string", required = true, check = kernel_path },
    kind = { "string", required = true, one_of = { "elementwise", "elementwise2", "rowwise" } },
    forward = { "string", required = true, check = c_name },
    backward = { "string", required = true, check = c_name },
    -- rowwise: a parameter vector as wide as the row (a norm's weight)
    params = { "boolean", default = false },
  })
  if s.params and s.kind ~= "rowwise" then
    fail("kernel.params", "a parameter vector is for kind = \"rowwise\", not " .. show(s.kind), "params = false")
  end
  if s.forward == s.backward then fail("kernel.backward", "is the forward function " .. show(s.forward), "another function") end
  local id = #kernels + 1
  kernels[id] = { path = PLAN_DIR .. "/" .. s.source, source = s.source, kind = s.kind,
                  forward = s.forward, backward = s.backward, params = s.params, line = plan_line(2) or 0 }
  return { __kind = "kernel", id = id, kind = s.kind, source = s.source, forward = s.forward, backward = s.backward,
           params = s.params }
end

-- The private record of a kernel the plan made (copies of the object, as
-- weft.plan's rebuild makes, keep its id), or nil.
local function kernel_of(v)
  return kind_of(v) == "kernel" and mtype(v.id) == "integer" and kernels[v.id] or nil
end

-- g:apply(k, x) / g:apply(k2, x, y); a rowwise kernel with params:
-- g:apply(k, x, prefix), its weight prefix .. ".weight" (ones, like a norm's).
function Graph:apply(k, x, y)
  need("apply", self, { "x", "tensor", x })
  local rec = kernel_of(k)
  if not rec then fail("graph:apply", "expected a kernel, got " .. describe(k), "a kernel made by weft.kernel { ... }") end
  local n = KERNEL_KINDS[rec.kind]
  local params = {}
  if rec.params then
    need("apply", self, { "prefix", "string", y })
    params = { self:param(y .. ".weight", { x.width }, "ones", 0, 0) }
  elseif n == 2 then
    need("apply", self, { "y", "tensor", y })
    if x.width ~= y.width then
      fail("graph:apply", "widths differ: " .. x.width .. " vs " .. y.width, "two tensors of one width")
    end
  elseif y ~= nil then
    fail("graph:apply", "a " .. rec.kind .. " kernel takes one tensor, got a second", "g:apply(k, x)")
  end
  return self:op("kernel", ids(n == 2 and { x, y } or { x }), params, x.width,
                 { kernel_path = rec.path, kernel_source = rec.source, kernel_kind = rec.kind,
                   kernel_params = rec.params, forward = rec.forward, backward = rec.backward,
                   kernel_line = rec.line })
end

-- A model field naming a kernel of `kind`, or one of the strings in one_of.
local function kernel_or(kind, one_of)
  return function(v)
    if type(v) == "string" then
      for _, o in ipairs(one_of) do if o == v then return end end
      return show(v) .. " is not a known value", concat(one_of, ", ") .. ", or " .. article(kind) .. " kernel"
    end
    local rec = kernel_of(v)
    if not rec then return "expected a string or a kernel, got " .. describe(v), concat(one_of, ", ") .. ", or weft.kernel { ... }" end
    if rec.kind ~= kind then return "the kernel is " .. rec.kind .. ", not " .. kind, "a kernel of kind = \"" .. kind .. "\"" end
  end
end

---------------------------------------------------------------------------
-- Model families.
---------------------------------------------------------------------------
local make_gpt2, make_llama  -- (spec, vision, prefix): vision(g) builds a VLM's encoder, prefix
                             -- leads the language model's names (make_vlm)

-- A model object with its graph from build().  weft.plan never reads the
-- graph of the object the plan holds (it rebuilds the model from its spec),
-- so a constructor called by the plan defers it until the plan reads
-- obj.graph, if ever: the model is then built once per load, not twice.
-- Only models whose spec has no user kernel defer: built-in layers cannot
-- fail once the spec is checked, a kernel's application may, and must fail
-- on the constructor's line.
local function model_object(obj, build, may_defer)
  if defer_graphs and may_defer then
    return setmetatable(obj, { __index = function(t, k)
      if k ~= "graph" then return nil end
      local g = build()
      rawset(t, "graph", g)
      return g
    end })
  end
  obj.graph = build()
  return obj
end

function make_gpt2(spec, vision, prefix)
  local s = check_fields("gpt2", spec, {
    layers = { "integer", min = 1, max = 1024, required = true },
    hidden = { "integer", min = 1, max = 1 << 16, required = true },
    heads = { "integer", min = 1, max = 1024, required = true },
    seq = { "integer", min = 1, max = 1 << 17, required = true },
    vocab = { "integer", min = 2, max = 65536, required = true,
              valid = "2 .. 65536 (tokens are stored as uint16)" },
    init_std = { "number", min = 0, max = 1, default = 0.02 },
    -- Hugging Face's names: "gelu_new" the tanh approximation (GPT-2's), "gelu" the exact erf form
    -- or a user kernel (weft.kernel, kind = "elementwise")
    activation = { "any", default = "gelu_new", check = kernel_or("elementwise", { "gelu_new", "gelu" }) },
  })
  if s.hidden % s.heads ~= 0 then
    fail("gpt2.heads", s.heads .. " does not divide hidden = " .. s.hidden,
         "a divisor of " .. s.hidden .. ": " .. divisors(s.hidden))
  end
  local function build()
    local g = new_graph { seq = s.seq, vocab = s.vocab }
    local C, std = s.hidden, s.init_std
    -- GPT-2 scales the projections that write into the residual stream.
    local proj_std = std / sqrt(2 * s.layers)
    -- the names: GPT2LMHeadModel's, or with LLaVA's prefix "model.language_model."
    local M = prefix or ""
    g:input { kind = "tokens" }
    local image = vision and vision(g, C)
    local x
    if image then  -- the positions added to the image rows too, as LLaVA's GPT-2 does
      x = g:token_embedding(M .. "wte", C, std)
      g.tied = M .. "wte.weight"
      x = g:position_add(g:image_merge(x, image), M .. "wpe", std / 2)
    else
      x = g:embedding(M .. "wte", M .. "wpe", C, std)
    end
    for l = 0, s.layers - 1 do
      local p = M .. "h." .. l .. "."
      g:block(l)
      local h = g:layernorm(x, p .. "ln_1")
      h = g:linear(h, p .. "attn.c_attn", 3 * C, "column", std)
      h = g:attention(h, s.heads)
      h = g:linear(h, p .. "attn.c_proj", C, "row", proj_std)
      x = g:add(x, h)
      h = g:layernorm(x, p .. "ln_2")
      h = g:linear(h, p .. "mlp.c_fc", 4 * C, "column", std)
      if kernel_of(s.activation) then h = g:apply(s.activation, h)
      elseif s.activation == "gelu" then h = g:gelu_erf(h) else h = g:gelu(h) end
      h = g:linear(h, p .. "mlp.c_proj", C, "row", proj_std)
      x = g:add(x, h)
    end
    g:block(nil)
    x = g:layernorm(x, M .. "ln_f")
    g:lm_head_xent(x)
    -- under LLaVA (prefix given), whose lm_head transformers ties to an
    -- embed_tokens GPT-2 lacks: the head is saved untied, a copy of wte
    if prefix then g:hf_constant("lm_head.weight", { s.vocab, C }, M .. "wte.weight") end
    return g
  end
  return model_object({ __kind = "model", family = "gpt2", layers = s.layers, hidden = s.hidden,
                        heads = s.heads, seq = s.seq, vocab = s.vocab, spec = s },
                      build, not kernel_of(s.activation))
end

-- LLaMA (Touvron et al. 2023): pre-norm RMSNorm blocks, rotary positions,
-- grouped-query attention, SwiGLU MLP, no biases, an untied LM head.
-- Parameter names are Hugging Face LlamaForCausalLM's; the projection
-- weights are held (in, out) like every weft linear and checkpointed (out, in)
-- as HF's are (layout "transposed").
function make_llama(spec, vision, prefix)
  local s = check_fields("llama", spec, {
    layers = { "integer", min = 1, max = 1024, required = true },
    hidden = { "integer", min = 1, max = 1 << 16, required = true },
    heads = { "integer", min = 1, max = 1024, required = true },
    kv_heads = { "integer", min = 1, max = 1024, required = true },
    ffn_hidden = { "integer", min = 1, max = 1 << 18, required = true },
    seq = { "integer", min = 1, max = 1 << 17, required = true },
    vocab = { "integer", min = 2, max = 65536, required = true,
              valid = "2 .. 65536 (tokens are stored as uint16)" },
    rope_theta = { "number", min = 1, max = 1e9, default = 10000 },
    norm_eps = { "number", min = 1e-12, max = 1, default = 1e-5 },
    init_std = { "number", min = 0, max = 1, default = 0.02 },
    -- the MLP's gate(gate, up): "swiglu", or a user kernel (weft.kernel, kind = "elementwise2")
    mlp_gate = { "any", default = "swiglu", check = kernel_or("elementwise2", { "swiglu" }) },
    -- every RMSNorm: "rmsnorm" (built in, eps = norm_eps), or a user kernel
    -- (weft.kernel, kind = "rowwise", params = true; its eps is its own)
    norm = { "any", default = "rmsnorm", check = kernel_or("rowwise", { "rmsnorm" }) },
  })
  if kernel_of(s.norm) and not kernel_of(s.norm).params then
    fail("llama.norm", "the rowwise kernel has no parameter vector", "a kernel with params = true (the norm's weight)")
  end
  local function norm(g, x, prefix)
    if kernel_of(s.norm) then return g:apply(s.norm, x, prefix) end
    return g:rmsnorm(x, prefix, s.norm_eps)
  end
  if s.hidden % s.heads ~= 0 then
    fail("llama.heads", s.heads .. " does not divide hidden = " .. s.hidden,
         "a divisor of " .. s.hidden .. ": " .. divisors(s.hidden))
  end
  if s.heads % s.kv_heads ~= 0 then
    fail("llama.kv_heads", s.kv_heads .. " does not divide heads = " .. s.heads,
         "a divisor of " .. s.heads .. ": " .. divisors(s.heads))
  end
  local hd = s.hidden // s.heads
  if hd % 2 ~= 0 then
    fail("llama.heads", "head size hidden / heads = " .. s.hidden .. " / " .. s.heads .. " = " .. hd
         .. " is odd; RoPE turns pairs of features", "heads making hidden / heads even")
  end
  local function build()
    local g = new_graph { seq = s.seq, vocab = s.vocab }
    local C, std, kvd = s.hidden, s.init_std, s.kv_heads * hd
    -- as GPT-2, the projections that write into the residual stream are scaled
    local proj_std = std / sqrt(2 * s.layers)
    -- Hugging Face's nn.Linear keeps its weights (out, in): so do the checkpoints
    local HF = "transposed"
    -- the decoder's names: LlamaForCausalLM's "model.", LLaVA's "model.language_model."
    local M = prefix or "model."
    g:input { kind = "tokens" }
    local image = vision and vision(g, C)
    local x = g:token_embedding(M .. "embed_tokens", C, std)
    if image then x = g:image_merge(x, image) end
    for l = 0, s.layers - 1 do
      local p = M .. "layers." .. l .. "."
      g:block(l)
      local h = norm(g, x, p .. "input_layernorm")
      local q = g:linear(h, p .. "self_attn.q_proj", C, "column", std, false, HF)
      local k = g:linear(h, p .. "self_attn.k_proj", kvd, "column", std, false, HF)
      local v = g:linear(h, p .. "self_attn.v_proj", kvd, "column", std, false, HF)
      h = g:gqa_attention(g:rope(q, k, s.heads, s.kv_heads, s.rope_theta), v, s.heads, s.kv_heads)
      h = g:linear(h, p .. "self_attn.o_proj", C, "row", proj_std, false, HF)
      x = g:add(x, h)
      h = norm(g, x, p .. "post_attention_layernorm")
      local gate = g:linear(h, p .. "mlp.gate_proj", s.ffn_hidden, "column", std, false, HF)
      local up = g:linear(h, p .. "mlp.up_proj", s.ffn_hidden, "column", std, false, HF)
      local gated = kernel_of(s.mlp_gate) and g:apply(s.mlp_gate, gate, up) or g:swiglu(gate, up)
      h = g:linear(gated, p .. "mlp.down_proj", C, "row", proj_std, false, HF)
      x = g:add(x, h)
    end
    g:block(nil)
    x = norm(g, x, M .. "norm")
    g:lm_head_xent(x, g:param("lm_head.weight", { s.vocab, C }, "normal", std, 1))
    return g
  end
  return model_object({ __kind = "model", family = "llama", layers = s.layers, hidden = s.hidden, heads = s.heads,
                        kv_heads = s.kv_heads, ffn_hidden = s.ffn_hidden, rope_theta = s.rope_theta,
                        norm_eps = s.norm_eps, seq = s.seq, vocab = s.vocab, spec = s },
                      build, not (kernel_of(s.norm) or kernel_of(s.mlp_gate)))
end

---------------------------------------------------------------------------
-- Vision-language models (weft.vit, weft.vlm).
---------------------------------------------------------------------------

-- A ViT as SigLIP's vision tower: patch embedding, learned position
-- embeddings, pre-norm blocks with bidirectional attention and a GELU (tanh)
-- MLP, a final norm.  On its own it is a description; weft.vlm builds it.
local VIT_FIELDS = {
  image = { "integer", min = 1, max = 4096, required = true, valid = "the image side in pixels (square images)" },
  patch = { "integer", min = 1, max = 4096, required = true },
  channels = { "integer", min = 1, max = 4, default = 3 },
  layers = { "integer", min = 1, max = 1024, required = true },
  hidden = { "integer", min = 1, max = 1 << 16, required = true },
  heads = { "integer", min = 1, max = 1024, required = true },
  mlp = { "integer", min = 1, max = 1 << 18 },
  init_std = { "number", min = 0, max = 1, default = 0.02 },
}
local function check_vit(spec)
  local s = check_fields("vit", spec, VIT_FIELDS)
  if s.image % s.patch ~= 0 then
    fail("vit.patch", show(s.patch) .. " does not divide image = " .. s.image,
         "a divisor of " .. s.image .. ": " .. divisors(s.image))
  end
  if s.hidden % s.heads ~= 0 then
    fail("vit.heads", s.heads .. " does not divide hidden = " .. s.hidden,
         "a divisor of " .. s.hidden .. ": " .. divisors(s.hidden))
  end
  s.mlp = s.mlp or 4 * s.hidden
  return s, (s.image // s.patch) * (s.image // s.patch)  -- and its patches per image
end

local function make_vit(spec)
  local s, positions = check_vit(spec)
  return { __kind = "vision", family = "vit", image = s.image, patch = s.patch, channels = s.channels,
           layers = s.layers, hidden = s.hidden, heads = s.heads, mlp = s.mlp, positions = positions, spec = s }
end

-- The spec an object made by weft.vit / weft.llama / weft.gpt2 was built
-- from, its own fields over it (so that --set model.vision.patch=4 or
-- model.llm.layers=4 edit a VLM's parts).
local function respec(obj)
  local t = {}
  for k, v in next, obj.spec do
    local top = rawget(obj, k)
    if top ~= nil then t[k] = top else t[k] = v end
  end
  return t
end

-- weft.vlm: the encoder runs on each sample's rows 0 .. P-1 (P patches; the
-- WVLM data puts the image placeholders first), a projector MLP (LLaVA's:
-- linear, GELU, linear) maps its output to the language model's width, and
-- the projected patches replace the placeholders' token embeddings.  The
-- loss is over text positions only (the data's mask; batch_vlm.c).  The
-- encoder and projector sit before the first transformer block, so a
-- pipeline keeps them on its first stage.
local function make_vlm(spec)
  local s = check_fields("vlm", spec, {
    vision = { "table", required = true, valid = "weft.vit { ... }" },
    projector = { "table", default = {} },
    llm = { "table", required = true, valid = "weft.llama { ... } or weft.gpt2 { ... }" },
    image_token = { "integer", min = 0, max = 65535, required = true },
    freeze = { "table", default = {} },
  })
  require_kind("vlm.vision", s.vision, "vision", "weft.vit { ... }")
  require_kind("vlm.llm", s.llm, "model", "weft.llama { ... } or weft.gpt2 { ... }")
  local family = rawget(s.llm, "family")
  if family ~= "gpt2" and family ~= "llama" then
    fail("vlm.llm", "a " .. show(family) .. " model", "weft.llama { ... } or weft.gpt2 { ... }")
  end
  if type(s.llm.spec) ~= "table" or type(s.vision.spec) ~= "table" then
    fail("vlm", "vision and llm must be made by weft.vit and weft.llama / weft.gpt2", "weft.vit { ... }, weft.llama { ... }")
  end
  local proj = check_fields("vlm.projector", s.projector, {
    layers = { "integer", min = 1, max = 2, default = 2 },
  })
  local freeze = check_fields("vlm.freeze", s.freeze, {
    vision = { "boolean", default = false },
    projector = { "boolean", default = false },
    llm = { "boolean", default = false },
  })
  if freeze.vision and freeze.projector and freeze.llm then
    fail("vlm.freeze", "every part frozen: nothing would train", "at most two of vision, projector and llm true")
  end
  local v, positions = check_vit(respec(s.vision))
  local llm = respec(s.llm)
  local llm_seq, llm_vocab = llm.seq, llm.vocab
  if mtype(llm_vocab) == "integer" and s.image_token >= llm_vocab then
    fail("vlm.image_token", show(s.image_token) .. " is not a token of the language model's vocabulary",
         "0 .. " .. (llm_vocab - 1))
  end
  if mtype(llm_seq) == "integer" and positions > llm_seq then
    fail("vlm.vision", "the image's " .. positions .. " patches do not fit the language model's seq = " .. llm_seq,
         "a larger patch or seq >= " .. positions)
  end
  local image = { height = v.image, width = v.image, channels = v.channels, patch = v.patch,
                  positions = positions, token = s.image_token }
  -- built into the language model's graph, before its token embedding, named
  -- and laid out as transformers' LlavaForConditionalGeneration keeps a
  -- SigLIP tower and LLaVA's projector: nn.Linear weights (out, in), the
  -- fused q|k|v saved as q_proj, k_proj and v_proj (layout "qkv")
  local V, PJ, HF = "model.vision_tower.vision_model.", "model.multi_modal_projector.", "transposed"
  local function vision(g, C)
    local std, D, P = v.init_std, v.hidden, positions
    local proj_std = std / sqrt(2 * v.layers)
    local x = g:patch_embedding(V .. "embeddings", image, D, std)
    g:hf_constant(V .. "embeddings.patch_embedding.bias", { D }, 0)
    for l = 0, v.layers - 1 do
      local p = V .. "encoder.layers." .. l .. "."
      local h = g:layernorm(x, p .. "layer_norm1")
      h = g:linear(h, p .. "self_attn.qkv_proj", 3 * D, "column", std, nil, "qkv")
      h = g:attention(h, v.heads, P)
      h = g:linear(h, p .. "self_attn.out_proj", D, "row", proj_std, nil, HF)
      x = g:add(x, h)
      h = g:layernorm(x, p .. "layer_norm2")
      h = g:linear(h, p .. "mlp.fc1", v.mlp, "column", std, nil, HF)
      h = g:gelu(h)
      h = g:linear(h, p .. "mlp.fc2", D, "row", proj_std, nil, HF)
      x = g:add(x, h)
    end
    -- The features are the last layer's output: LLaVA's vision_feature_layer
    -- = -1 reads hidden_states[-1], which SigLIP's post_layernorm never
    -- touches, so Weft computes no final norm here (hf_config.c; the file
    -- still holds the unused norm, as the identity).
    g:hf_constant(V .. "post_layernorm.weight", { D }, 1)
    g:hf_constant(V .. "post_layernorm.bias", { D }, 0)
    if proj.layers == 1 then return g:linear(x, PJ .. "linear_1", C, nil, std, nil, HF) end
    x = g:linear(x, PJ .. "linear_1", C, "column", std, nil, HF)
    x = g:gelu_erf(x)
    return g:linear(x, PJ .. "linear_2", C, "row", std, nil, HF)
  end
  -- the language model's names under LLaVA's: "model.language_model."
  local obj = (family == "llama" and make_llama or make_gpt2)(llm, vision, "model.language_model.")
  obj.image, obj.vision, obj.image_token = image, make_vit(v), s.image_token
  -- freeze: a frozen part's parameters get no gradients, no optimizer state
  -- and no backward of their own (graph.c decides which backward still runs)
  -- (by the names above: a part is the parameters under its prefix)
  for _, q in ipairs(obj.graph.params) do
    local part = q.name:sub(1, #V) == V and "vision"
              or q.name:sub(1, #PJ) == PJ and "projector" or "llm"
    if freeze[part] then q.frozen, obj.frozen = true, true end
  end
  return obj
end

---------------------------------------------------------------------------
-- Devices and clusters.  Peaks are dense, per device, in TFLOP/s; memory in
-- GiB; bandwidths in GB/s.
---------------------------------------------------------------------------
-- sms and clock_mhz: SM count and the clock the peaks are quoted at (the
-- GEMM tile / wave model in compiler/cost.c); sources cited in cost.c.
local GPU = {
  V100 = { __kind = "device", name = "V100", memory_gib = 32, fp32 = 15.7, tf32 = 15.7, fp16 = 125, bf16 = 0, hbm_gbs = 900, sms = 80, clock_mhz = 1530 },
  A100_40GB = { __kind = "device", name = "A100_40GB", memory_gib = 40, fp32 = 19.5, tf32 = 156, fp16 = 312, bf16 = 312, hbm_gbs = 1555, sms = 108, clock_mhz = 1410 },
  A100_80GB = { __kind = "device", name = "A100_80GB", memory_gib = 80, fp32 = 19.5, tf32 = 156, fp16 = 312, bf16 = 312, hbm_gbs = 2039, sms = 108, clock_mhz = 1410 },
  H100_SXM = { __kind = "device", name = "H100_SXM", memory_gib = 80, fp32 = 67, tf32 = 494.7, fp16 = 989.4, bf16 = 989.4, hbm_gbs = 3350, sms = 132, clock_mhz = 1830 },
  H200 = { __kind = "device", name = "H200", memory_gib = 141, fp32 = 67, tf32 = 494.7, fp16 = 989.4, bf16 = 989.4, hbm_gbs = 4800, sms = 132, clock_mhz = 1830 },
  -- The CPU backend's rank: one process; its peak comes from `weft calibrate`.
  CPU = { __kind = "device", name = "CPU", memory_gib = 16, fp32 = 0.1, tf32 = 0.1, fp16 = 0.1, bf16 = 0.1, hbm_gbs = 20 },
}
api.gpu = GPU

-- Links: bandwidth per direction per device in GB/s (nominal), latency of one
-- NCCL ring step in microseconds, and bus_gbs: the bus bandwidth nccl-tests
-- reports for a large all-reduce on the link, which the cost model uses
-- (sources cited in compiler/cost.c; `weft-calibrate` measures this machine's).
local LINK = {
  NVLINK2 = { __kind = "link", name = "NVLINK2", gbs = 150, latency_us = 3.4, bus_gbs = 120 },
  NVLINK3 = { __kind = "link", name = "NVLINK3", gbs = 300, latency_us = 3.4, bus_gbs = 230 },
  NVLINK4 = { __kind = "link", name = "NVLINK4", gbs = 450, latency_us = 3.4, bus_gbs = 360 },
  PCIE4 = { __kind = "link", name = "PCIE4", gbs = 31.5, latency_us = 5.7, bus_gbs = 21 },
  PCIE5 = { __kind = "link", name = "PCIE5", gbs = 63, latency_us = 5.7, bus_gbs = 42 },
  IB_HDR = { __kind = "link", name = "IB_HDR", gbs = 25, latency_us = 14, bus_gbs = 23 },
  IB_NDR = { __kind = "link", name = "IB_NDR", gbs = 50, latency_us = 14, bus_gbs = 46 },
  ROCE100 = { __kind = "link", name = "ROCE100", gbs = 12.5, latency_us = 14, bus_gbs = 11 },
  ROCE200 = { __kind = "link", name = "ROCE200", gbs = 25, latency_us = 14, bus_gbs = 22 },
  -- CPU-backend ranks on one machine: shared memory through MPI
  SHM = { __kind = "link", name = "SHM", gbs = 5, latency_us = 1 },
}
api.link = LINK
local LINK_FIELDS = {
  name = { "string", required = true },
  gbs = { "number", min = 0.001, max = 1e6, required = true },
  latency_us = { "number", min = 0, max = 1e6, default = 0 },
  bus_gbs = { "number", min = 0, max = 1e6, default = 0 },  -- 0: gbs
}
-- The plan can edit weft.gpu.CPU; the default must not follow.
local DEFAULT_DEVICE = copy(GPU.CPU)

local function positive(v) if v <= 0 then return show(v) .. " is not above 0", "a number > 0" end end

-- A device is any table marked __kind = "device" (weft.gpu.* or an edited
-- copy of one); its figures reach the reports as divisors, so check them.
local DEVICE = {
  name = { "string", required = true, check = plain_name },
  memory_gib = { "number", min = 0, max = 1e6, required = true, check = positive },
  fp32 = { "number", min = 0, max = 1e6, required = true, check = positive },
  tf32 = { "number", min = 0, max = 1e6, default = 0 },
  fp16 = { "number", min = 0, max = 1e6, default = 0 },
  bf16 = { "number", min = 0, max = 1e6, default = 0 },
  hbm_gbs = { "number", min = 0, max = 1e6, default = 0 },
  sms = { "integer", min = 0, max = 1e6, default = 0 },  -- 0: no GEMM tile model
  clock_mhz = { "number", min = 0, max = 1e6, default = 0 },
}

local function make_cluster(spec)
  local s = check_fields("cluster", spec, {
    nodes = { "integer", min = 1, max = 1 << 20, default = 1 },
    devices_per_node = { "integer", min = 1, max = 1024, default = 8 },
    device = { "table", default = DEFAULT_DEVICE, valid = "weft.gpu.H100_SXM, weft.gpu.CPU, ..." },
    intra_link = { "table", valid = "weft.link.NVLINK4, weft.link.PCIE5, ..." },
    inter_link = { "table", valid = "weft.link.IB_NDR, weft.link.ROCE200, ..." },
    -- CPU ranks on a node with fewer cores: bound to cores or not (weft/bind.h)
    bind = { "string", one_of = { "auto", "off", "stages", "all" }, default = "auto" },
  })
  require_kind("cluster.device", s.device, "device", "one of weft.gpu.*")
  s.device = check_fields("cluster.device", s.device, DEVICE)
  -- links: inside a node and between nodes (CPU ranks share memory)
  local cpu = s.device.name == "CPU"
  s.intra_link = s.intra_link or copy(cpu and LINK.SHM or LINK.NVLINK4)
  s.inter_link = s.inter_link or copy(LINK.IB_NDR)
  for _, k in ipairs { "intra_link", "inter_link" } do
    require_kind("cluster." .. k, s[k], "link", "one of weft.link.*")
    s[k] = check_fields("cluster." .. k, s[k], LINK_FIELDS)
  end
  s.__kind = "cluster"
  return s
end

local function make_adamw(spec)
  local s = check_fields("adamw", spec, {
    lr = { "number", min = 0, max = 10, required = true },
    min_lr = { "number", min = 0, max = 10 },
    betas = { "table", default = { 0.9, 0.95 } },
    eps = { "number", min = 0, max = 1, default = 1e-8 },
    weight_decay = { "number", min = 0, max = 10, default = 0.1 },
    warmup = { "integer", min = 0, max = LIMIT, default = 0 },
  })
  if #s.betas ~= 2 then fail("adamw.betas", "expected two numbers", "{ 0.9, 0.95 }") end
  local betas = {}  -- our own table: the plan keeps a reference to its own
  for i = 1, 2 do
    betas[i] = check_value("adamw.betas[" .. i .. "]", s.betas[i], { "number", min = 0, max = 0.999999 })
  end
  s.betas = betas
  s.min_lr = s.min_lr or s.lr * 0.1
  if s.min_lr > s.lr then
    fail("adamw.min_lr", show(s.min_lr) .. " exceeds lr = " .. show(s.lr), "0 .. " .. show(s.lr))
  end
  s.__kind = "optimizer"
  return s
end

---------------------------------------------------------------------------
-- The plan.
---------------------------------------------------------------------------
local function parse_override(text)
  if text == "true" then return true elseif text == "false" then return false end
  return tointeger(tonumber(text)) or tonumber(text) or text
end

-- Applies `--set a.b.c=value` to the spec before it is checked.
local function apply_overrides(spec)
  for _, path in ipairs(sorted_keys(OVERRIDES or {})) do
    local t, keys = spec, {}
    for key in path:gmatch("[^.]+") do keys[#keys + 1] = tointeger(tonumber(key)) or key end
    if #keys == 0 or path:find("^%.") or path:find("%.$") or path:find("..", 1, true) then
      fail("--set " .. path, "is not a field path", "names joined by '.', e.g. mesh.dp")
    end
    for i = 1, #keys - 1 do
      if type(t[keys[i]]) ~= "table" then t[keys[i]] = {} end
      t = t[keys[i]]
    end
    t[keys[#keys]] = parse_override(OVERRIDES[path])
  end
end

-- Every table weft.plan returned, mapped to a private copy that the plan never
-- saw.  The plan can still edit (or forge) the table it returns; the host can
-- look the returned value up here and use the copy (see load.c).
local plans_made = setmetatable({}, { __mode = "k" })
registry["weft.plans"] = plans_made

-- fp16 loss scaling (DeepSpeed's dynamic loss scaler).  A number is a static
-- scale; a table a dynamic one.  Scales are powers of two, so that scaling
-- and unscaling the gradients are exact.  bf16 and fp32 have the range of
-- fp32 and take none.  The result always has every field (C reads them).
local SCALE_VALID = "{ initial = 65536 (or initial_scale_power = 16), window = 1000, hysteresis = 2, min = 1 }, or a number (a static scale)"
local function power_of_two(v)
  if v <= 0 then return false end
  local m = v
  while m >= 2 do m = m / 2 end
  while m < 1 do m = m * 2 end
  return m == 1
end
local function pow2_check(v)
  if not power_of_two(v) then
    return show(v) .. " is not a power of two (scaling by one is exact)", "1, 2, 4, ..., 65536, ..."
  end
end
local function check_loss_scale(precision, v)
  if v == nil then
    if precision ~= "fp16" then return { dynamic = false, initial = 1, window = 1, hysteresis = 1, min = 1 } end
    v = {}
  elseif precision ~= "fp16" then
    fail("plan.loss_scale", "is for precision = \"fp16\" only; " .. precision .. " needs no loss scaling",
         "leave loss_scale out, or precision = \"fp16\"")
  end
  if type(v) == "number" then
    local n = check_value("plan.loss_scale", v, { "number", min = 2^-24, max = 2^24, check = pow2_check })
    return { dynamic = false, initial = n, window = 1, hysteresis = 1, min = n }
  end
  if type(v) ~= "table" then
    fail("plan.loss_scale", "expected a table or a number, got " .. describe(v), SCALE_VALID)
  end
  local t = check_fields("loss_scale", v, {
    initial = { "number", min = 1, max = 2^24, check = pow2_check },
    initial_scale_power = { "integer", min = 0, max = 24 },
    window = { "integer", min = 1, max = 1 << 30, default = 1000 },
    hysteresis = { "integer", min = 1, max = 1 << 20, default = 2 },
    min = { "number", min = 2^-24, max = 2^24, default = 1, check = pow2_check },
  })
  if t.initial and t.initial_scale_power then
    fail("loss_scale.initial_scale_power", "given together with loss_scale.initial", "one of the two")
  end
  local initial = t.initial or 1 << (t.initial_scale_power or 16)
  if initial < t.min then
    fail("loss_scale.min", show(t.min) .. " is above the initial scale " .. show(initial),
         "a power of two <= " .. show(initial))
  end
  return { dynamic = true, initial = initial, window = t.window, hysteresis = t.hysteresis, min = t.min }
end

-- NCCL's environment (plan.nccl, for comm = "nccl" on --backend cuda): each
-- field is an NCCL_* variable named without its prefix, in lower case, whose
-- value is checked against the values NCCL's documentation lists; launch.sh
-- exports them.  Lists (algo, proto, debug_subsys) are comma-separated, not
-- case-sensitive, and may start with "^" to exclude, as NCCL reads them.
local function nccl_list(what, names)
  local valid = concat(names, ", ") .. "; a comma-separated list, \"^\" first to exclude"
  return function(v)
    local items = v:gsub("^%^", "")
    if items == "" then return "is empty", valid end
    for item in (items .. ","):gmatch("([^,]*),") do
      local known = false
      for _, n in ipairs(names) do if n:lower() == item:lower() then known = true end end
      if not known then return show(item) .. " is not " .. what, valid end
    end
  end
end
-- interface and HCA names: NCCL's "^" (exclude) and "=" (exact) prefixes, then
-- names with optional ":port", comma-separated; nothing a shell would expand
local function nccl_names(v)
  local items = v:gsub("^[%^=]", "")
  for item in (items .. ","):gmatch("([^,]*),") do
    if not item:match("^[%w_.:%-]+$") then
      return show(v) .. " is not a list of names",
             "names like \"eth0\" or \"mlx5_0:1,mlx5_1\", \"^\" (exclude) or \"=\" (exact) first"
    end
  end
end
local NCCL_FIELDS = {
  algo = { "string", check = nccl_list("an NCCL algorithm",
           { "Ring", "Tree", "CollnetDirect", "CollnetChain", "NVLS", "NVLSTree", "PAT" }) },
  proto = { "string", check = nccl_list("an NCCL protocol", { "LL", "LL128", "Simple" }) },
  debug = { "string", one_of = { "VERSION", "WARN", "INFO", "TRACE" } },
  debug_subsys = { "string", check = nccl_list("an NCCL debug subsystem",
                   { "INIT", "COLL", "P2P", "SHM", "NET", "GRAPH", "TUNING", "ENV", "ALLOC", "CALL",
                     "PROXY", "NVLS", "BOOTSTRAP", "REG", "PROFILE", "RAS", "ALL" }) },
  min_nchannels = { "integer", min = 1, max = 64 },
  max_nchannels = { "integer", min = 1, max = 64 },
  buffsize = { "integer", min = 1, max = LIMIT },  -- bytes per buffer; NCCL's default 4 MiB
  nthreads = { "integer", one_of = { 64, 128, 256, 512 } },
  p2p_level = { "string", one_of = { "LOC", "NVL", "PIX", "PXB", "PHB", "SYS" } },
  net_gdr_level = { "string", one_of = { "LOC", "PIX", "PXB", "PHB", "SYS" } },
  cross_nic = { "integer", one_of = { 0, 1, 2 } },
  ib_hca = { "string", check = nccl_names },
  socket_ifname = { "string", check = nccl_names },
  ib_disable = { "boolean" },
  p2p_disable = { "boolean" },
  shm_disable = { "boolean" },
  nvls_enable = { "boolean" },
}
-- The checked settings as { "NCCL_ALGO=Ring", ... }, sorted (launch.sh is
-- byte-identical for the same plan).
local function check_nccl(comm, v)
  local t = check_fields("nccl", v, NCCL_FIELDS)
  local env = {}
  for _, k in ipairs(sorted_keys(NCCL_FIELDS)) do
    local x = t[k]
    if x ~= nil then
      if type(x) == "boolean" then x = x and 1 or 0 end
      env[#env + 1] = "NCCL_" .. k:upper() .. "=" .. tostring(x)
    end
  end
  if t.min_nchannels and t.max_nchannels and t.min_nchannels > t.max_nchannels then
    fail("nccl.min_nchannels", show(t.min_nchannels) .. " is above nccl.max_nchannels = "
         .. show(t.max_nchannels), "1 .. " .. show(t.max_nchannels))
  end
  if comm == "mpi" and #env > 0 then
    fail("plan.nccl", "is for comm = \"nccl\"; comm = \"mpi\" runs no NCCL",
         "leave nccl out, or comm = \"nccl\"")
  end
  return env
end

local function make_plan(spec)
  -- Replace each constructed object by a copy of the spec it was made from;
  -- overrides such as --set model.layers=4 then edit that copy, and the
  -- object is rebuilt (and checked again) below.
  local from = {}  -- spec copy -> the record of what made it
  local raw = spec
  if type(spec) == "table" then
    raw = {}
    for k, v in pairs(spec) do
      local rec = made[v]
      if rec then
        v = copy(rec.spec)
        from[v] = rec
      end
      raw[k] = v
    end
    if raw.cluster == nil then  -- the default cluster, so that --set cluster.nodes=2 works
      raw.cluster = { device = copy(DEFAULT_DEVICE) }
      from[raw.cluster] = { kind = "cluster", make = make_cluster }
    end
    apply_overrides(raw)
  end
  local s = check_fields("plan", raw, {
    name = { "string", check = plain_name },
    model = { "table", required = true, valid = "weft.gpt2 { ... }" },
    cluster = { "table", valid = "weft.cluster { ... }" },
    mesh = { "table", default = {} },
    batch = { "table", required = true, valid = "{ micro = 4, global = 32 }" },
    buckets = { "table", default = {} },
    optimizer = { "table", required = true, valid = "weft.adamw { lr = 3e-4 }" },
    clip_grad_norm = { "number", min = 0, max = 1e6, default = 1.0 },
    train = { "table", default = {} },
    data = { "table", required = true, valid = "{ train = \"data/train.bin\" }" },
    precision = { "string", one_of = { "fp32", "bf16", "fp16" }, default = "fp32" },
    loss_scale = { "any", valid = "{ initial = 65536, window = 1000, hysteresis = 2, min = 1 }, or a number (a static scale)" },
    zero = { "integer", min = 0, max = 3, default = 0 },
    -- ZeRO-3: parameter all-gathers started this many gathers ahead of use
    zero_prefetch = { "integer", min = 0, max = 16, default = 1 },
    -- ... or, as DeepSpeed's stage3_prefetch_bucket_size: as many gathers
    -- ahead as fit in this many MiB of parameters (replaces zero_prefetch)
    zero_prefetch_mb = { "number", min = 0, max = 1e6 },
    recompute = { "string", one_of = { "none", "selective", "full" }, default = "none" },
    offload = { "table", default = {} },
    pipeline = { "table", default = {} },
    -- --backend cuda: collectives through NCCL, or staged through host memory
    -- by MPI (ranks may then share a GPU); the CPU backend always uses MPI
    comm = { "string", one_of = { "nccl", "mpi" }, default = "nccl" },
    nccl = { "table", default = {} },
    fault = { "table", default = {} },
    -- the values tensor-parallel collectives carry: "auto" the activation
    -- dtype (16-bit under bf16 / fp16), "fp32" widened floats (the sums of
    -- the older runtime, bit for bit)
    tp_comm = { "string", one_of = { "auto", "fp32", "bf16", "fp16" }, default = "auto" },
    -- where weight gradients accumulate (over microbatches, and the data-
    -- parallel sum): "auto" the plan's precision (rounded to 16 bits after
    -- every accumulation under bf16 / fp16, as every plan always did), "fp32"
    -- in floats, rounded never (Megatron's --accumulate-allreduce-grads-in-fp32)
    grad_accum = { "string", one_of = { "auto", "fp32", "bf16", "fp16" }, default = "auto" },
    -- how the working parameters (the copy the kernels read) are stored under
    -- bf16 / fp16: "auto" in the plan's 16-bit type, 2 bytes each, where the
    -- backend does (the CPU) and that saves memory (the kernels
    -- widen one op's weights into float scratch); "fp32" as floats holding the
    -- rounded values (the older layout: the same numbers, twice the bytes)
    param_storage = { "string", one_of = { "auto", "fp32" }, default = "auto" },
    -- the values the data-parallel gradient all-reduce carries: "fp32" (the
    -- default: gradients accumulate in fp32, and Megatron then reduces them
    -- in fp32 too), or the plan's 16-bit type (half the bytes; each rank's
    -- gradient and each partial sum rounded to it)
    dp_comm = { "string", one_of = { "fp32", "bf16", "fp16" }, default = "fp32" },
    -- the LM head runs fused and chunked in backward (both backends): token
    -- rows per chunk of logits (0: the compiler's choice per backend,
    -- ops_loss.c's lmhead_chunk_rows)
    lmhead_chunk = { "integer", min = 0, max = 1 << 30, default = 0 },
  })

  local function rebuild(field, v, kind, ctor)
    local rec = from[v]
    defer_graphs = false  -- the graph load.c reads is made here
    if rec and rec.kind == kind then
      local obj = rec.make(v)
      obj.line = rec.line
      return obj
    end
    local got = rec and article(rec.kind)
             or kind_of(v) and ("a table marked __kind = " .. show(kind_of(v)) .. " that weft did not make")
             or describe(v)
    fail(field, "expected " .. article(kind) .. " made by " .. ctor .. ", got " .. got, ctor)
  end
  s.model = rebuild("plan.model", s.model, "model", "weft.gpt2 { ... }, weft.llama { ... } or weft.vlm { ... }")
  s.optimizer = rebuild("plan.optimizer", s.optimizer, "optimizer", "weft.adamw { ... }")
  s.cluster = rebuild("plan.cluster", s.cluster, "cluster", "weft.cluster { ... }")

  -- one size field per mesh axis (the host's axis table), and the order
  local mesh_schema = {
    sp = { "boolean", default = false },
    order = { "string", default = MESH.default_order },
  }
  for _, a in ipairs(MESH.axes) do mesh_schema[a.name] = { "integer", min = 1, max = a.max, default = 1 } end
  s.mesh = check_fields("mesh", s.mesh, mesh_schema)
  -- mesh.order: the axes joined by "-", each once, the first fastest
  local sizes, names = {}, {}
  for _, a in ipairs(MESH.axes) do sizes[a.name], names[#names + 1] = s.mesh[a.name], a.name end
  local world, product = 1, concat(names, " * ")  -- "dp * tp * pp"
  for _, n in ipairs(names) do world = world * s.mesh[n] end
  if world > LIMIT then
    fail("plan.mesh", product .. " = " .. world .. " ranks overflow a 32-bit rank number", product .. " <= " .. LIMIT)
  end
  -- the compiler writes a row per rank (ranks.txt) and checks every group
  if world > MAX_RANKS then
    fail("plan.mesh", product .. " = " .. world .. " ranks, more than weft compiles for (" .. MAX_RANKS .. ")",
         product .. " <= " .. MAX_RANKS)
  end
  local strides, problem, valid = MESH.layout(s.mesh.order, sizes)
  if not strides then fail("mesh.order", show(s.mesh.order) .. " " .. problem, valid) end
  s.batch = check_fields("batch", s.batch, {
    micro = { "integer", min = 1, max = 1 << 20, required = true },
    global = { "integer", min = 1, max = 1 << 24 },
  })
  s.buckets = check_fields("buckets", s.buckets, {
    mb = { "number", min = 0, max = 1 << 20, default = 25 },
  })
  s.train = check_fields("train", s.train, {
    steps = { "integer", min = 1, max = 1 << 30, default = 100 },
    log_every = { "integer", min = 1, max = 1 << 30, default = 1 },
    ckpt_every = { "integer", min = 0, max = 1 << 30, default = 0 },
    seed = { "integer", min = 0, max = LIMIT, default = 1337 },
  })
  -- a rank that waits this long in one collective or receive ends the job,
  -- naming itself, the instruction and the peer (runtime/common/watchdog.c)
  s.fault = check_fields("fault", s.fault, {
    timeout_s = { "number", min = 0.1, max = 1e6, default = 300 },
  })
  s.data = check_fields("data", s.data, {
    train = { "string", required = true, valid = "a path to a .bin token file", check = plain_path },
  })
  s.pipeline = check_fields("pipeline", s.pipeline, {
    schedule = { "string", one_of = { "gpipe", "1f1b", "interleaved", "zb-h1", "pipedream-2bw" }, default = "1f1b" },
    microbatches = { "integer", min = 1, max = 1 << 20 },
    virtual = { "integer", min = 1, max = 64, default = 1 },
    stages = { "table" },
    -- Megatron's scatter/gather: with tp > 1 each tp rank sends only its 1/tp
    -- slice of a boundary activation (and of its gradient) to its peer in the
    -- next stage, and the receiving stage all-gathers the slices in its tp
    -- group.  On by default when tp > 1 without sequence parallelism (whose
    -- boundary tensor is already split by sequence: there is nothing to save).
    scatter_gather = { "boolean" },
  })

  -- What this version can run.
  -- Tensor parallelism splits heads (attention) and the MLP's 4h features.
  if s.model.heads % s.mesh.tp ~= 0 then
    fail("mesh.tp", show(s.mesh.tp) .. " does not divide heads = " .. s.model.heads,
         "a divisor of " .. s.model.heads .. ": " .. divisors(s.model.heads))
  end
  -- ... and, for grouped-query attention, the key/value heads and the MLP's
  -- ffn_hidden features.
  if s.model.kv_heads and s.model.kv_heads % s.mesh.tp ~= 0 then
    fail("mesh.tp", show(s.mesh.tp) .. " does not divide kv_heads = " .. s.model.kv_heads,
         "a divisor of " .. s.model.kv_heads .. ": " .. divisors(s.model.kv_heads))
  end
  if s.model.ffn_hidden and s.model.ffn_hidden % s.mesh.tp ~= 0 then
    fail("mesh.tp", show(s.mesh.tp) .. " does not divide ffn_hidden = " .. s.model.ffn_hidden,
         "a divisor of " .. s.model.ffn_hidden .. ": " .. divisors(s.model.ffn_hidden))
  end
  -- A VLM's vision encoder: its blocks are split alike (heads, MLP features)
  local vis = s.model.vision
  if vis and vis.heads % s.mesh.tp ~= 0 then
    fail("mesh.tp", show(s.mesh.tp) .. " does not divide the vision encoder's heads = " .. vis.heads,
         "a divisor of " .. vis.heads .. ": " .. divisors(vis.heads))
  end
  if vis and vis.mlp % s.mesh.tp ~= 0 then
    fail("mesh.tp", show(s.mesh.tp) .. " does not divide the vision encoder's mlp = " .. vis.mlp,
         "a divisor of " .. vis.mlp .. ": " .. divisors(vis.mlp))
  end
  if s.mesh.sp and s.mesh.tp > 1 and (s.batch.micro * s.model.seq) % s.mesh.tp ~= 0 then
    fail("mesh.sp", "sequence parallelism splits micro * seq = " .. s.batch.micro * s.model.seq
         .. " tokens, which tp = " .. s.mesh.tp .. " does not divide",
         "sp = false, or a batch.micro making micro * seq a multiple of tp")
  end
  -- Ranks are numbered by mesh.order, its first dimension fastest: tp-dp-pp
  -- (Megatron's) by default.  Tensor parallelism exchanges activations in
  -- every layer: keep its group inside one node, which with tp not innermost
  -- means its span (tp times the dimensions inside it) fits a node.
  local inner = strides.tp  -- the ranks of the axes inside tp
  local span, per_node = s.mesh.tp * inner, s.cluster.devices_per_node
  if s.cluster.device.name ~= "CPU" and s.mesh.tp > per_node then
    fail("mesh.tp", show(s.mesh.tp) .. " spans more than one node of " .. per_node
         .. " devices", "tp <= " .. per_node)
  end
  if s.cluster.device.name ~= "CPU" and s.mesh.tp > 1 and inner > 1 and (span > per_node or per_node % span ~= 0) then
    fail("mesh.order", show(s.mesh.order) .. " spreads each tp group over " .. s.mesh.tp * inner
         .. " consecutive ranks, more than one node of " .. s.cluster.devices_per_node .. " devices",
         "an order with tp innermost, e.g. \"tp-dp-pp\"")
  end
  -- Pipeline: pp * virtual chunks of whole transformer blocks.
  local pl, chunks = s.pipeline, s.mesh.pp * s.pipeline.virtual
  if pl.virtual > 1 and pl.schedule ~= "interleaved" then
    fail("pipeline.virtual", show(pl.virtual) .. " needs schedule = \"interleaved\"",
         "1, or schedule = \"interleaved\"")
  end
  if pl.schedule == "interleaved" and s.mesh.pp > 1 and pl.virtual < 2 then
    fail("pipeline.virtual", "the interleaved schedule needs virtual >= 2 chunks per rank", ">= 2")
  end
  if chunks > s.model.layers then
    fail("mesh.pp", "pp * virtual = " .. chunks .. " pipeline chunks, but the model has only "
         .. s.model.layers .. " layers", "pp * virtual <= " .. s.model.layers)
  end
  if pl.stages then
    local sum = 0
    if #pl.stages ~= chunks then
      fail("pipeline.stages", "lists " .. #pl.stages .. " layer counts for " .. chunks .. " chunks",
           chunks .. " counts (pp * virtual), summing to " .. s.model.layers)
    end
    for i = 1, #pl.stages do
      check_value("pipeline.stages[" .. i .. "]", pl.stages[i], { "integer", min = 1, max = s.model.layers })
      sum = sum + pl.stages[i]
    end
    if sum ~= s.model.layers then
      fail("pipeline.stages", "layer counts sum to " .. sum .. ", the model has " .. s.model.layers,
           chunks .. " counts summing to " .. s.model.layers)
    end
  end
  -- slices of whole 16-bit pairs: micro * seq * hidden values in 2 tp pieces
  local splits = (s.batch.micro * s.model.seq * (s.model.hidden or 1)) % (2 * s.mesh.tp) == 0
  if pl.scatter_gather == nil then
    pl.scatter_gather = s.mesh.tp > 1 and not s.mesh.sp and s.mesh.pp > 1 and splits
  elseif pl.scatter_gather and not splits then
    fail("pipeline.scatter_gather", "true, but micro * seq * hidden = " .. s.batch.micro * s.model.seq * (s.model.hidden or 1)
         .. " values do not split into tp = " .. s.mesh.tp .. " slices of whole 16-bit pairs", "false")
  elseif pl.scatter_gather and (s.mesh.tp == 1 or s.mesh.pp == 1) then
    fail("pipeline.scatter_gather", "true splits pipeline messages across tp ranks, but mesh has tp = "
         .. s.mesh.tp .. " and pp = " .. s.mesh.pp, "false, or tp > 1 and pp > 1")
  elseif pl.scatter_gather and s.mesh.sp then
    fail("pipeline.scatter_gather", "true with mesh.sp: under sequence parallelism each tp rank already "
         .. "sends only its 1/tp of the sequence", "false (or leave it out)")
  end
  s.offload = check_fields("offload", s.offload, {
    optimizer = { "string", one_of = { "none", "cpu" }, default = "none" },
    params = { "string", one_of = { "none", "cpu" }, default = "none" },
  })
  if s.offload.params == "cpu" and s.zero < 3 then
    -- only ZeRO-3 partitions parameters, and only partitioned parameters move
    fail("offload.params", "\"cpu\" needs zero = 3 (only sharded parameters move to the host)",
         "\"none\", or zero = 3")
  end
  s.loss_scale = check_loss_scale(s.precision, s.loss_scale)
  -- a 16-bit format the device has no arithmetic for (V100: no bf16)
  if s.precision ~= "fp32" and (s.cluster.device[s.precision] or 0) <= 0 then
    fail("plan.precision", show(s.precision) .. " on a " .. s.cluster.device.name .. ", which has no "
         .. s.precision .. " arithmetic (its " .. s.precision .. " peak is 0)",
         "\"fp32\"" .. ((s.cluster.device.fp16 or 0) > 0 and " or \"fp16\"" or ""))
  end
  s.nccl = check_nccl(s.comm, s.nccl)
  if (s.tp_comm == "bf16" or s.tp_comm == "fp16") and s.tp_comm ~= s.precision then
    fail("plan.tp_comm", show(s.tp_comm) .. " under precision = " .. show(s.precision)
         .. ": tensor-parallel messages carry the activations' dtype or fp32",
         "\"auto\", \"fp32\"" .. (s.precision ~= "fp32" and ", " .. show(s.precision) or ""))
  end
  if (s.grad_accum == "bf16" or s.grad_accum == "fp16") and s.grad_accum ~= s.precision then
    fail("plan.grad_accum", show(s.grad_accum) .. " under precision = " .. show(s.precision)
         .. ": weight gradients accumulate in the plan's dtype or in fp32",
         "\"auto\", \"fp32\"" .. (s.precision ~= "fp32" and ", " .. show(s.precision) or ""))
  end

  if s.dp_comm ~= "fp32" and s.dp_comm ~= s.precision then
    fail("plan.dp_comm", show(s.dp_comm) .. " under precision = " .. show(s.precision)
         .. ": data-parallel sums carry fp32 or the plan's 16-bit type",
         "\"fp32\"" .. (s.precision ~= "fp32" and ", " .. show(s.precision) or ""))
  end

  -- Batch arithmetic: global = micro * dp * accumulation steps.
  local per_step = s.batch.micro * s.mesh.dp
  if not s.batch.global and per_step > 1 << 24 then
    -- the default global batch must obey batch.global's own limit (C keeps it in an int)
    fail("batch.micro", "batch.micro * mesh.dp = " .. s.batch.micro .. " * " .. s.mesh.dp .. " = "
         .. per_step .. " is above the largest global batch " .. (1 << 24),
         "micro * dp <= " .. (1 << 24))
  end
  s.batch.global = s.batch.global or per_step
  if s.batch.global % per_step ~= 0 then
    fail("batch.global", show(s.batch.global) .. " is not a multiple of batch.micro * mesh.dp = "
         .. s.batch.micro .. " * " .. s.mesh.dp .. " = " .. per_step,
         "a multiple of " .. per_step .. ", e.g. " .. per_step .. ", " .. 2 * per_step .. ", " .. 4 * per_step)
  end
  s.batch.accum = s.batch.global // per_step
  -- The schedule lists each microbatch's forward and backward on every stage
  -- and the generated programs a line for each: bound it, so that compiling
  -- (and building what it writes) stays in seconds.
  if s.batch.accum > MAX_MICROBATCHES then
    fail("pipeline.microbatches", "batch.global / (micro * dp) = " .. s.batch.global .. " / ("
         .. s.batch.micro .. " * " .. s.mesh.dp .. ") = " .. s.batch.accum
         .. " microbatches a step, more than " .. MAX_MICROBATCHES,
         "at most " .. MAX_MICROBATCHES .. ": a smaller batch.global, or a larger batch.micro or mesh.dp")
  end
  local schedule_ops = s.mesh.pp * s.pipeline.virtual * s.batch.accum
  if schedule_ops > MAX_SCHEDULE then
    fail("pipeline.microbatches", "pp * virtual * microbatches = " .. s.mesh.pp .. " * " .. s.pipeline.virtual
         .. " * " .. s.batch.accum .. " = " .. schedule_ops .. " forward steps in the schedule, more than "
         .. MAX_SCHEDULE, "pp * virtual * (batch.global / (micro * dp)) <= " .. MAX_SCHEDULE)
  end
  if pl.microbatches and pl.microbatches ~= s.batch.accum then
    fail("pipeline.microbatches", show(pl.microbatches) .. " disagrees with batch.global / (micro * dp) = "
         .. s.batch.accum, tostring(s.batch.accum) .. ", or leave it out")
  end
  if pl.schedule == "pipedream-2bw" and s.mesh.pp > 1 then
    -- no flush: batch b+1's first forwards run while batch b drains, so each
    -- step's 1F1B must reach its steady state
    if s.batch.accum < s.mesh.pp then
      fail("pipeline.microbatches", "pipedream-2bw runs without a pipeline flush and needs at least "
           .. "pp = " .. s.mesh.pp .. " microbatches per step, got " .. s.batch.accum,
           "batch.global / (micro * dp) >= " .. s.mesh.pp)
    end
    -- a global gradient norm would make every stage wait for all the others at
    -- its optimizer step; PipeDream-2BW does not clip globally
    if s.clip_grad_norm > 0 then
      fail("plan.clip_grad_norm", show(s.clip_grad_norm) .. " with pipedream-2bw over pp > 1: the "
           .. "stages update asynchronously and a global norm would synchronise them", "0")
    end
    -- the same holds for fp16's overflow verdict, which every rank must share
    if s.precision == "fp16" then
      fail("plan.precision", "\"fp16\" with pipedream-2bw over pp > 1: skipping a step on an "
           .. "overflow needs every stage's verdict at each optimizer step, which would synchronise "
           .. "the asynchronous stages", "\"fp32\" or \"bf16\"")
    end
  end
  if pl.schedule == "interleaved" and s.mesh.pp > 1 and s.batch.accum % s.mesh.pp ~= 0 then
    fail("pipeline.microbatches", "the interleaved schedule needs a multiple of pp = " .. s.mesh.pp
         .. " microbatches, got " .. s.batch.accum,
         "batch.global / (micro * dp) a multiple of " .. s.mesh.pp)
  end

  -- Sizes that the runtime indexes with 64-bit offsets but kernels with int.
  local m = s.model
  local tokens = s.batch.micro * m.seq
  -- What would be valid: a smaller micro, unless even micro = 1 overflows.
  local function fewer(per_sequence, what)
    if LIMIT // per_sequence >= 1 then return "micro <= " .. LIMIT // per_sequence end
    return "a smaller model: " .. what .. " = " .. per_sequence .. " overflows even with micro = 1"
  end
  if tokens * m.vocab > LIMIT then
    fail("batch.micro", "micro * seq * vocab = " .. tokens * m.vocab .. " logits overflow a 32-bit index",
         fewer(m.seq * m.vocab, "seq * vocab"))
  end
  if tokens * 4 * m.hidden > LIMIT then
    fail("batch.micro", "micro * seq * 4 * hidden = " .. tokens * 4 * m.hidden
         .. " overflows a 32-bit index", fewer(m.seq * 4 * m.hidden, "seq * 4 * hidden"))
  end

  if m.ffn_hidden and tokens * m.ffn_hidden > LIMIT then
    fail("batch.micro", "micro * seq * ffn_hidden = " .. tokens * m.ffn_hidden
         .. " overflows a 32-bit index", fewer(m.seq * m.ffn_hidden, "seq * ffn_hidden"))
  end

  local devices = s.cluster.nodes * s.cluster.devices_per_node
  -- comm = "mpi" stages collectives through host memory: ranks may then
  -- share the devices, evenly; NCCL needs a device per rank
  local shared = s.comm == "mpi"
  if s.cluster.device.name ~= "CPU" and shared and world > devices and world % devices ~= 0 then
    fail("plan.mesh", product .. " = " .. world .. " ranks do not share the cluster's "
         .. devices .. " devices evenly (comm = \"mpi\")", "a mesh whose product is a multiple of " .. devices)
  elseif s.cluster.device.name ~= "CPU" and (shared and world < devices or not shared and world ~= devices) then
    fail("plan.mesh", product .. " = " .. world .. " ranks, but the cluster has "
         .. devices .. " devices", shared and "a mesh whose product is a multiple of " .. devices
         or "a mesh whose product is " .. devices
            .. (world > devices and ", or comm = \"mpi\" to let ranks share devices" or ""))
  end
  s.world = world
  s.__kind = "plan"
  s.line = where()
  plans_made[s] = copy(s)
  return s
end

api.graph = entry("graph", new_graph)
api.gpt2 = constructor("gpt2", "model", make_gpt2)
api.llama = constructor("llama", "model", make_llama)
api.vit = constructor("vit", "vision", make_vit)
api.vlm = constructor("vlm", "model", make_vlm)
api.cluster = constructor("cluster", "cluster", make_cluster)
api.adamw = constructor("adamw", "optimizer", make_adamw)
api.plan = entry("plan", make_plan)
api.kernel = entry("kernel", make_kernel)

-- `weft` as the plan sees it.  Looking up one of its functions notes the
-- plan's line (see plan_line); pairs(weft) still lists everything.
local weft = setmetatable({}, {
  __index = function(_, k)
    local v = api[k]
    if entry_name[v] then looked_up[k] = plan_line(3) end
    return v
  end,
  __pairs = function() return next, api, nil end,
  __metatable = "weft",
})

return weft
