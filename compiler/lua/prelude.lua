-- The weft library seen by plans.  Runs once per compile, before the plan, in a
-- state the host has sandboxed; it keeps debug.getinfo for itself so that every
-- error can name the plan's file:line, and hands the plan only `weft`.
--
-- Chunk arguments: the plan's chunk name ("@path") and a table of overrides
-- ("mesh.dp" -> "4") from `weft compile --set`.
local PLAN_SOURCE, OVERRIDES = ...
local getinfo = debug.getinfo
local floor, huge, fmt = math.floor, math.huge, string.format

local weft = { version = WEFT_VERSION }

---------------------------------------------------------------------------
-- Diagnostics: every error names the plan's file:line, the field and what
-- would be valid.
---------------------------------------------------------------------------
local function where()
  for level = 2, 64 do
    local info = getinfo(level, "Sl")
    if not info then break end
    if info.source == PLAN_SOURCE then
      return info.short_src .. ":" .. info.currentline
    end
  end
  return PLAN_SOURCE:gsub("^@", "") .. ":0"
end

local function fail(field, problem, valid)
  local msg = where() .. ": " .. field .. ": " .. problem
  if valid then msg = msg .. " (valid: " .. valid .. ")" end
  error(msg, 0)
end

local function show(v)
  if type(v) == "string" then return fmt("%q", v) end
  if math.type(v) == "float" and v == floor(v) and v < 2^53 and v > -2^53 then
    return fmt("%.1f", v)
  end
  return tostring(v)
end

local function edit_distance(a, b)
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      local cost = a:sub(i, i) == b:sub(j, j) and 0 or 1
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
    end
    prev = cur
  end
  return prev[#b]
end

local function sorted_keys(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  return keys
end

---------------------------------------------------------------------------
-- Schema checking.  A schema maps each field to a rule:
--   { "integer"|"number"|"string"|"boolean"|"table", min=, max=, one_of={..},
--     default=, required=true, check=function(v) -> problem, valid }
---------------------------------------------------------------------------
local LIMIT = 2^31 - 1  -- sizes that reach the C side must fit an int

local function check_value(field, v, rule)
  local want = rule[1]
  if want == "integer" then
    if math.type(v) ~= "integer" then
      if type(v) == "number" and v == floor(v) and v >= -LIMIT and v <= LIMIT then
        v = floor(v)
      else
        fail(field, "expected an integer, got " .. type(v) .. " " .. show(v),
             rule.min and ("an integer >= " .. rule.min) or "an integer")
      end
    end
  elseif want == "number" then
    if type(v) ~= "number" or v ~= v or v == huge or v == -huge then
      fail(field, "expected a finite number, got " .. type(v) .. " " .. show(v), "a number")
    end
  elseif type(v) ~= want then
    local valid = rule.one_of and table.concat(rule.one_of, ", ") or ("a " .. want)
    fail(field, "expected a " .. want .. ", got " .. type(v) .. " " .. show(v), valid)
  end
  if rule.min and v < rule.min then
    fail(field, show(v) .. " is below the minimum " .. rule.min,
         rule.max and (rule.min .. " .. " .. rule.max) or (">= " .. rule.min))
  end
  if rule.max and v > rule.max then
    fail(field, show(v) .. " is above the maximum " .. rule.max,
         rule.min and (rule.min .. " .. " .. rule.max) or ("<= " .. rule.max))
  end
  if rule.one_of then
    local ok = false
    for _, o in ipairs(rule.one_of) do if o == v then ok = true end end
    if not ok then
      fail(field, show(v) .. " is not a known value", table.concat(rule.one_of, ", "))
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
    fail(what, "expected a table, got " .. type(t) .. " " .. show(t), "a table { ... }")
  end
  for k in pairs(t) do
    if type(k) ~= "string" or k:sub(1, 2) ~= "__" then
      if type(k) ~= "string" or not schema[k] then
        local names = sorted_keys(schema)
        local best, best_d = nil, 3
        if type(k) == "string" then
          for _, n in ipairs(names) do
            local d = edit_distance(k, n)
            if d < best_d then best, best_d = n, d end
          end
        end
        local hint = best and (" (did you mean '" .. best .. "'?)") or ""
        fail(what .. "." .. tostring(k), "unknown field" .. hint, table.concat(names, ", "))
      end
    end
  end
  local out = {}
  for k, v in pairs(t) do out[k] = v end
  for k, rule in pairs(schema) do
    local v = t[k]
    if v == nil then
      if rule.required then
        fail(what .. "." .. k, "is required", rule.valid or ("a " .. rule[1]))
      end
      out[k] = rule.default
    else
      out[k] = check_value(what .. "." .. k, v, rule)
    end
  end
  return out
end

local function kind_of(t) return type(t) == "table" and rawget(t, "__kind") or nil end

local function require_kind(field, v, kind, ctor)
  if kind_of(v) ~= kind then
    fail(field, "expected a " .. kind .. ", got " .. (kind_of(v) or type(v)), ctor)
  end
  return v
end

local function divisors(n)
  local d = {}
  for i = 1, math.min(n, 4096) do if n % i == 0 then d[#d + 1] = i end end
  if #d > 8 then d = { d[1], d[2], d[3], d[4], "...", d[#d - 1], d[#d] } end
  return table.concat(d, ", ")
end

---------------------------------------------------------------------------
-- The model graph: primitives append parameters and operations to a graph;
-- model families are written with them.  The compiler derives the backward
-- pass, the parallel roles' collectives and the memory plan from this list.
---------------------------------------------------------------------------
local Graph = {}
Graph.__index = Graph

function weft.graph(spec)
  spec = check_fields("graph", spec or {}, {
    seq = { "integer", min = 1, max = 1 << 20, required = true },
    vocab = { "integer", min = 2, max = 1 << 24, required = true },
  })
  return setmetatable({ __kind = "graph", seq = spec.seq, vocab = spec.vocab,
                        params = {}, ops = {}, n_tensors = 0, names = {} }, Graph)
end

function Graph:param(name, shape, init, std, decay)
  if self.names[name] then fail("graph", "parameter " .. name .. " defined twice") end
  for i, s in ipairs(shape) do
    if math.type(s) ~= "integer" or s < 1 or s > LIMIT then
      fail(name, "dimension " .. i .. " is " .. show(s), "an integer in 1 .. " .. LIMIT)
    end
  end
  self.names[name] = true
  self.params[#self.params + 1] = { name = name, shape = shape, init = init,
                                    std = std or 0, decay = decay }
  return name
end

function Graph:tensor(width)
  self.n_tensors = self.n_tensors + 1
  return { id = self.n_tensors, width = width }
end

function Graph:op(kind, inputs, params, width, attrs)
  local out = self:tensor(width)
  local op = { op = kind, inputs = inputs, params = params, out = out.id, width = width }
  for k, v in pairs(attrs or {}) do op[k] = v end
  self.ops[#self.ops + 1] = op
  return out
end

local function ids(list)
  local r = {}
  for i, t in ipairs(list) do r[i] = t.id end
  return r
end

function Graph:embedding(prefix_tok, prefix_pos, dim, std)
  local wte = self:param(prefix_tok .. ".weight", { self.vocab, dim }, "normal", std, 1)
  local wpe = self:param(prefix_pos .. ".weight", { self.seq, dim }, "normal", std / 2, 1)
  self.tied = wte
  return self:op("embed", {}, { wte, wpe }, dim)
end

function Graph:layernorm(x, prefix)
  local w = self:param(prefix .. ".weight", { x.width }, "ones", 0, 0)
  local b = self:param(prefix .. ".bias", { x.width }, "zeros", 0, 0)
  return self:op("layernorm", ids { x }, { w, b }, x.width)
end

-- parallel: "column" splits the output features across tensor-parallel ranks,
-- "row" splits the input features (its partial sums are all-reduced).
function Graph:linear(x, prefix, out_features, parallel, std)
  local w = self:param(prefix .. ".weight", { x.width, out_features }, "normal", std or 0.02, 1)
  local b = self:param(prefix .. ".bias", { out_features }, "zeros", 0, 0)
  return self:op("linear", ids { x }, { w, b }, out_features, { parallel = parallel })
end

function Graph:attention(qkv, heads)
  if qkv.width % 3 ~= 0 then fail("attention", "input width must hold q, k and v") end
  return self:op("attention", ids { qkv }, {}, qkv.width // 3, { heads = heads })
end

function Graph:gelu(x) return self:op("gelu", ids { x }, {}, x.width) end

function Graph:add(a, b)
  if a.width ~= b.width then fail("add", "widths differ: " .. a.width .. " vs " .. b.width) end
  return self:op("add", ids { a, b }, {}, a.width)
end

-- Logits against the (tied) token embedding, then cross-entropy with the
-- next-token targets; the output is the loss.
function Graph:lm_head_xent(x, weight)
  return self:op("lmhead_xent", ids { x }, { weight or self.tied }, 1)
end

---------------------------------------------------------------------------
-- Model families.
---------------------------------------------------------------------------
function weft.gpt2(spec)
  local s = check_fields("gpt2", spec, {
    layers = { "integer", min = 1, max = 1024, required = true },
    hidden = { "integer", min = 1, max = 1 << 16, required = true },
    heads = { "integer", min = 1, max = 1024, required = true },
    seq = { "integer", min = 1, max = 1 << 17, required = true },
    vocab = { "integer", min = 2, max = 65536, required = true,
              valid = "2 .. 65536 (tokens are stored as uint16)" },
    init_std = { "number", min = 0, max = 1, default = 0.02 },
  })
  if s.hidden % s.heads ~= 0 then
    fail("gpt2.heads", s.heads .. " does not divide hidden = " .. s.hidden,
         "a divisor of " .. s.hidden .. ": " .. divisors(s.hidden))
  end
  local g = weft.graph { seq = s.seq, vocab = s.vocab }
  local C, std = s.hidden, s.init_std
  -- GPT-2 scales the projections that write into the residual stream.
  local proj_std = std / math.sqrt(2 * s.layers)
  local x = g:embedding("wte", "wpe", C, std)
  for l = 0, s.layers - 1 do
    local p = "h." .. l .. "."
    local h = g:layernorm(x, p .. "ln_1")
    h = g:linear(h, p .. "attn.c_attn", 3 * C, "column", std)
    h = g:attention(h, s.heads)
    h = g:linear(h, p .. "attn.c_proj", C, "row", proj_std)
    x = g:add(x, h)
    h = g:layernorm(x, p .. "ln_2")
    h = g:linear(h, p .. "mlp.c_fc", 4 * C, "column", std)
    h = g:gelu(h)
    h = g:linear(h, p .. "mlp.c_proj", C, "row", proj_std)
    x = g:add(x, h)
  end
  x = g:layernorm(x, "ln_f")
  g:lm_head_xent(x)
  return { __kind = "model", family = "gpt2", layers = s.layers, hidden = C,
           heads = s.heads, seq = s.seq, vocab = s.vocab, graph = g, line = where() }
end

---------------------------------------------------------------------------
-- Devices and clusters.  Peaks are dense, per device, in TFLOP/s; memory in
-- GiB; bandwidths in GB/s.
---------------------------------------------------------------------------
weft.gpu = {
  V100 = { __kind = "device", name = "V100", memory_gib = 32, fp32 = 15.7, tf32 = 15.7, fp16 = 125, bf16 = 0, hbm_gbs = 900 },
  A100_40GB = { __kind = "device", name = "A100_40GB", memory_gib = 40, fp32 = 19.5, tf32 = 156, fp16 = 312, bf16 = 312, hbm_gbs = 1555 },
  A100_80GB = { __kind = "device", name = "A100_80GB", memory_gib = 80, fp32 = 19.5, tf32 = 156, fp16 = 312, bf16 = 312, hbm_gbs = 2039 },
  H100_SXM = { __kind = "device", name = "H100_SXM", memory_gib = 80, fp32 = 67, tf32 = 494.7, fp16 = 989.4, bf16 = 989.4, hbm_gbs = 3350 },
  H200 = { __kind = "device", name = "H200", memory_gib = 141, fp32 = 67, tf32 = 494.7, fp16 = 989.4, bf16 = 989.4, hbm_gbs = 4800 },
  -- The CPU backend's rank: one process; its peak comes from `weft calibrate`.
  CPU = { __kind = "device", name = "CPU", memory_gib = 16, fp32 = 0.1, tf32 = 0.1, fp16 = 0.1, bf16 = 0.1, hbm_gbs = 20 },
}

function weft.cluster(spec)
  local s = check_fields("cluster", spec, {
    nodes = { "integer", min = 1, max = 1 << 20, default = 1 },
    devices_per_node = { "integer", min = 1, max = 1024, default = 8 },
    device = { "table", default = weft.gpu.CPU, valid = "weft.gpu.H100_SXM, weft.gpu.CPU, ..." },
  })
  require_kind("cluster.device", s.device, "device", "one of weft.gpu.*")
  s.__kind = "cluster"
  return s
end

function weft.adamw(spec)
  local s = check_fields("adamw", spec, {
    lr = { "number", min = 0, max = 10, required = true },
    min_lr = { "number", min = 0, max = 10 },
    betas = { "table", default = { 0.9, 0.95 } },
    eps = { "number", min = 0, max = 1, default = 1e-8 },
    weight_decay = { "number", min = 0, max = 10, default = 0.1 },
    warmup = { "integer", min = 0, max = LIMIT, default = 0 },
  })
  if #s.betas ~= 2 then fail("adamw.betas", "expected two numbers", "{ 0.9, 0.95 }") end
  for i = 1, 2 do
    check_value("adamw.betas[" .. i .. "]", s.betas[i], { "number", min = 0, max = 0.999999 })
  end
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
  return math.tointeger(tonumber(text)) or tonumber(text) or text
end

-- Applies `--set a.b.c=value` to the spec before it is checked.
local function apply_overrides(spec)
  for _, path in ipairs(sorted_keys(OVERRIDES or {})) do
    local t, keys = spec, {}
    for key in path:gmatch("[^.]+") do keys[#keys + 1] = key end
    for i = 1, #keys - 1 do
      if type(t[keys[i]]) ~= "table" then t[keys[i]] = {} end
      t = t[keys[i]]
    end
    t[keys[#keys]] = parse_override(OVERRIDES[path])
  end
end

local SUPPORTED_LATER = "is not supported yet by this version of weft"

function weft.plan(spec)
  if type(spec) == "table" then apply_overrides(spec) end
  local s = check_fields("plan", spec, {
    name = { "string" },
    model = { "table", required = true, valid = "weft.gpt2 { ... }" },
    cluster = { "table" },
    mesh = { "table", default = {} },
    batch = { "table", required = true, valid = "{ micro = 4, global = 32 }" },
    buckets = { "table", default = {} },
    optimizer = { "table", required = true, valid = "weft.adamw { lr = 3e-4 }" },
    clip_grad_norm = { "number", min = 0, max = 1e6, default = 1.0 },
    train = { "table", default = {} },
    data = { "table", required = true, valid = "{ train = \"data/train.bin\" }" },
    precision = { "string", one_of = { "fp32", "bf16", "fp16" }, default = "fp32" },
    zero = { "integer", min = 0, max = 3, default = 0 },
    pipeline = { "table", default = {} },
  })
  require_kind("plan.model", s.model, "model", "weft.gpt2 { ... }")
  require_kind("plan.optimizer", s.optimizer, "optimizer", "weft.adamw { ... }")
  s.cluster = s.cluster or weft.cluster {}
  require_kind("plan.cluster", s.cluster, "cluster", "weft.cluster { ... }")

  s.mesh = check_fields("mesh", s.mesh, {
    dp = { "integer", min = 1, max = 65536, default = 1 },
    tp = { "integer", min = 1, max = 1024, default = 1 },
    pp = { "integer", min = 1, max = 1024, default = 1 },
    order = { "string", default = "tp-dp-pp" },
  })
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
  s.data = check_fields("data", s.data, {
    train = { "string", required = true, valid = "a path to a .bin token file" },
  })
  s.pipeline = check_fields("pipeline", s.pipeline, {
    schedule = { "string", one_of = { "gpipe", "1f1b", "interleaved", "zb-h1", "pipedream-2bw" }, default = "1f1b" },
    microbatches = { "integer", min = 1, max = 1 << 20 },
  })

  -- What this version can run.
  if s.mesh.tp ~= 1 then fail("mesh.tp", show(s.mesh.tp) .. " " .. SUPPORTED_LATER, "1") end
  if s.mesh.pp ~= 1 then fail("mesh.pp", show(s.mesh.pp) .. " " .. SUPPORTED_LATER, "1") end
  if s.zero ~= 0 then fail("plan.zero", show(s.zero) .. " " .. SUPPORTED_LATER, "0") end
  if s.precision ~= "fp32" then
    fail("plan.precision", show(s.precision) .. " " .. SUPPORTED_LATER, "\"fp32\"")
  end

  -- Batch arithmetic: global = micro * dp * accumulation steps.
  local per_step = s.batch.micro * s.mesh.dp
  s.batch.global = s.batch.global or per_step
  if s.batch.global % per_step ~= 0 then
    fail("batch.global", show(s.batch.global) .. " is not a multiple of batch.micro * mesh.dp = "
         .. s.batch.micro .. " * " .. s.mesh.dp .. " = " .. per_step,
         "a multiple of " .. per_step .. ", e.g. " .. per_step .. ", " .. 2 * per_step .. ", " .. 4 * per_step)
  end
  s.batch.accum = s.batch.global // per_step

  -- Sizes that the runtime indexes with 64-bit offsets but kernels with int.
  local m = s.model
  local tokens = s.batch.micro * m.seq
  if tokens * m.vocab > LIMIT then
    fail("batch.micro", "micro * seq * vocab = " .. tokens * m.vocab .. " logits overflow a 32-bit index",
         "micro <= " .. LIMIT // (m.seq * m.vocab))
  end
  if tokens * 4 * m.hidden > LIMIT then
    fail("batch.micro", "micro * seq * 4 * hidden overflows a 32-bit index",
         "micro <= " .. LIMIT // (m.seq * 4 * m.hidden))
  end

  local world = s.mesh.dp * s.mesh.tp * s.mesh.pp
  local devices = s.cluster.nodes * s.cluster.devices_per_node
  if s.cluster.device.name ~= "CPU" and world ~= devices then
    fail("plan.mesh", "dp * tp * pp = " .. world .. " ranks, but the cluster has "
         .. devices .. " devices", "a mesh whose product is " .. devices)
  end
  s.world = world
  s.__kind = "plan"
  s.line = where()
  return s
end

return weft
