/* load.c: the `load` pass.  Runs the plan in the sandbox and copies the table
 * that weft.plan{} returned (already checked field by field by the prelude)
 * into the Program. */
#include <ctype.h>
#include <limits.h>
#include <lauxlib.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "program.h"
#include "sandbox.h"
#include "user_kernel.h"
#include "weft/bind.h"

/* Field readers: the prelude guarantees types, so a mismatch here is a bug in
 * weft, not in the plan; still reported, never crashed on. */
static int bad_field;

static lua_Integer get_int(lua_State *L, int t, const char *k) {
    lua_getfield(L, t, k);
    int ok;
    lua_Integer v = lua_tointegerx(L, -1, &ok);
    if (!ok) {
        wf_error("internal: plan field %s is not an integer", k);
        bad_field = 1;
    }
    lua_pop(L, 1);
    return v;
}

static double get_num(lua_State *L, int t, const char *k) {
    lua_getfield(L, t, k);
    int ok;
    double v = lua_tonumberx(L, -1, &ok);
    if (!ok) {
        wf_error("internal: plan field %s is not a number", k);
        bad_field = 1;
    }
    lua_pop(L, 1);
    return v;
}

static void get_str(lua_State *L, int t, const char *k, char *dst, size_t n) {
    lua_getfield(L, t, k);
    const char *s = lua_tostring(L, -1);
    snprintf(dst, n, "%s", s ? s : "");
    lua_pop(L, 1);
}

/* Pushes t[k] (a table) and returns its absolute index.  Lua promises 20
 * free stack slots to a C function, no more: every push through here first
 * makes room, so nesting deeper cannot overrun the stack. */
static int push_sub(lua_State *L, int t, const char *k) {
    if (!lua_checkstack(L, 8)) {
        wf_error("out of memory: the Lua stack cannot grow to read plan field %s", k);
        bad_field = 1;
    }
    lua_getfield(L, t, k);
    return lua_gettop(L);
}

/* Every reader leaves the stack as it found it: checked on the way out. */
#define STACK_BALANCED(L, top, what)                                                   \
    do {                                                                               \
        if (lua_gettop(L) != (top)) {                                                  \
            wf_error("internal: %s left %d Lua stack slots", what, lua_gettop(L) - (top)); \
            bad_field = 1;                                                             \
        }                                                                              \
    } while (0)

static void *checked_calloc(size_t n, size_t size, const char *what) {
    void *q = calloc(n ? n : 1, size);
    if (!q) wf_error("out of memory: cannot allocate %zu x %zu bytes for %s", n, size, what);
    return q;
}

static op_kind op_from_name(const char *s) {
    for (int k = 0; k < OP__COUNT; k++)
        if (strcmp(op_name((op_kind)k), s) == 0) return (op_kind)k;
    return OP__COUNT;
}

/* Names are unique (the prelude refuses a second definition).  Ops mostly
 * use the parameters in the order they were defined, so the search starts
 * after the last one found (*hint) and wraps: linear, not quadratic, in the
 * model's size. */
static int find_param(const Program *p, const char *name, int *hint) {
    for (int k = 0; k < p->n_params; k++) {
        int i = (*hint + k) % p->n_params;
        if (strcmp(p->params[i].name, name) == 0) {
            *hint = i + 1;
            return i;
        }
    }
    return -1;
}

static int load_params(Program *p, lua_State *L, int g) {
    int top = lua_gettop(L);
    int list = push_sub(L, g, "params");
    p->n_params = (int)lua_rawlen(L, list);
    p->params = checked_calloc((size_t)p->n_params, sizeof *p->params, "the parameter list");
    if (!p->params) return -1;
    for (int i = 0; i < p->n_params; i++) {
        lua_rawgeti(L, list, i + 1);
        int t = lua_gettop(L);
        ir_param *q = &p->params[i];
        get_str(L, t, "name", q->name, sizeof q->name);
        int shape = push_sub(L, t, "shape");
        q->ndim = (int)lua_rawlen(L, shape);
        q->numel = 1;
        for (int d = 0; d < q->ndim && d < 4; d++) {
            lua_rawgeti(L, shape, d + 1);
            q->shape[d] = (long)lua_tointeger(L, -1);
            q->numel *= q->shape[d];
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        char init[16];
        get_str(L, t, "init", init, sizeof init);
        q->init = strcmp(init, "ones") == 0 ? INIT_ONES
                : strcmp(init, "normal") == 0 ? INIT_NORMAL : INIT_ZEROS;
        q->std = get_num(L, t, "std");
        q->decay = (int)get_int(L, t, "decay");
        char layout[16];  /* the prelude's mark (Graph:param): nil, "transposed" or "qkv" */
        get_str(L, t, "layout", layout, sizeof layout);
        q->qkv = strcmp(layout, "qkv") == 0;
        q->transposed = strcmp(layout, "transposed") == 0 || (q->qkv && q->ndim == 2);
        lua_getfield(L, t, "frozen");  /* weft.vlm's freeze (nil: trainable) */
        q->frozen = lua_toboolean(L, -1);
        lua_pop(L, 1);
        memcpy(q->gshape, q->shape, sizeof q->gshape);
        q->split = SPLIT_NONE;
        q->sections = 1;
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    STACK_BALANCED(L, top, "load_params");
    return 0;
}

/* The graph's Hugging Face constants (Graph:hf_constant), after its params. */
static int load_hf_consts(Program *p, lua_State *L, int g) {
    int top = lua_gettop(L);
    int list = push_sub(L, g, "hf_constants");
    p->n_hf_consts = (int)lua_rawlen(L, list);
    p->hf_consts = checked_calloc((size_t)p->n_hf_consts, sizeof *p->hf_consts, "the constant list");
    if (!p->hf_consts) return -1;
    for (int i = 0; i < p->n_hf_consts; i++) {
        lua_rawgeti(L, list, i + 1);
        int t = lua_gettop(L);
        ir_hf_const *h = &p->hf_consts[i];
        get_str(L, t, "name", h->name, sizeof h->name);
        int shape = push_sub(L, t, "shape");
        h->ndim = (int)lua_rawlen(L, shape);
        if (h->ndim < 1 || h->ndim > 4) h->ndim = h->ndim < 1 ? 1 : 4;  /* Graph:hf_constant checks 1-4 dims */
        for (int d = 0; d < h->ndim; d++) {
            lua_rawgeti(L, shape, d + 1);
            h->shape[d] = (long)lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        lua_getfield(L, t, "value");  /* a number, or the name of the parameter it copies */
        int hint = 0;
        h->copy = lua_type(L, -1) == LUA_TSTRING ? find_param(p, lua_tostring(L, -1), &hint) : -1;
        h->value = h->copy < 0 ? lua_tonumber(L, -1) : 0.0;
        lua_pop(L, 1);
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    STACK_BALANCED(L, top, "load_hf_consts");
    return 0;
}

/* The ops of the model made on plan line `line`. */
static int load_ops(Program *p, lua_State *L, int g, int line) {
    int top = lua_gettop(L);
    int list = push_sub(L, g, "ops");
    p->n_ops = (int)lua_rawlen(L, list);
    p->ops = checked_calloc((size_t)p->n_ops, sizeof *p->ops, "the op list");
    p->n_tensors = p->n_ops + 1;  /* tensor ids start at 1, one per op output */
    p->tensors = checked_calloc((size_t)p->n_tensors, sizeof *p->tensors, "the tensor list");
    if (!p->ops || !p->tensors) return -1;
    int hint = 0;  /* find_param's start */
    for (int i = 0; i < p->n_ops; i++) {
        lua_rawgeti(L, list, i + 1);
        int t = lua_gettop(L);
        ir_op *o = &p->ops[i];
        char kind[32];
        get_str(L, t, "op", kind, sizeof kind);
        o->kind = op_from_name(kind);
        if (o->kind >= OP__COUNT || !op_row_of(o->kind) || !op_row_of(o->kind)->graph) {  /* the table's graph ops */
            wf_error("internal: unknown op '%s' in the model graph", kind);
            return -1;
        }
        o->out = (int)get_int(L, t, "out");
        if (o->out < 1 || o->out >= p->n_tensors) {
            wf_error("internal: op %d writes tensor %d outside the graph", i, o->out);
            return -1;
        }
        p->tensors[o->out].width = (long)get_int(L, t, "width");
        p->tensors[o->out].producer = i;
        p->tensors[o->out].rows_div = 1;
        int ins = push_sub(L, t, "inputs");
        o->n_in = (int)lua_rawlen(L, ins);
        for (int k = 0; k < o->n_in && k < 2; k++) {
            lua_rawgeti(L, ins, k + 1);
            o->in[k] = (int)lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
        lua_pop(L, 1);
        int ps = push_sub(L, t, "params");
        o->n_param = (int)lua_rawlen(L, ps);
        for (int k = 0; k < o->n_param && k < 2; k++) {
            lua_rawgeti(L, ps, k + 1);
            const char *name = lua_tostring(L, -1);
            o->param[k] = find_param(p, name ? name : "", &hint);
            lua_pop(L, 1);
            if (o->param[k] < 0) {
                wf_error("internal: op %d uses unknown parameter %s", i, name ? name : "?");
                return -1;
            }
        }
        lua_pop(L, 1);
        lua_getfield(L, t, "heads");
        o->heads = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, t, "kv_heads");
        o->kv_heads = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, t, "eps");
        o->eps = lua_tonumber(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, t, "prefix");
        o->prefix = (int)lua_tointeger(L, -1);
        lua_pop(L, 1);
        lua_getfield(L, t, "theta");
        o->theta = lua_tonumber(L, -1);
        lua_pop(L, 1);
        get_str(L, t, "parallel", o->parallel, sizeof o->parallel);
        /* the transformer block the prelude marked it with (g:block), if any */
        lua_getfield(L, t, "layer");
        o->layer = lua_isinteger(L, -1) ? (int)lua_tointeger(L, -1) : -1;
        lua_pop(L, 1);
        o->line = line;
        if (o->kind == OP_KERNEL) {  /* g:apply: the kernel, as the prelude checked its fields */
            char path[PATH_MAX], source[512], kkind[16], fwd[72], bwd[72];
            get_str(L, t, "kernel_path", path, sizeof path);
            get_str(L, t, "kernel_source", source, sizeof source);
            get_str(L, t, "kernel_kind", kkind, sizeof kkind);
            get_str(L, t, "forward", fwd, sizeof fwd);
            get_str(L, t, "backward", bwd, sizeof bwd);
            lua_getfield(L, t, "kernel_params");
            int kparams = lua_toboolean(L, -1);
            lua_pop(L, 1);
            o->kernel = user_kernel_add(p, path, source, kkind, fwd, bwd, kparams, (int)get_int(L, t, "kernel_line"));
            if (o->kernel < 0) return -1;
        }
        lua_pop(L, 1);
    }
    lua_pop(L, 1);
    STACK_BALANCED(L, top, "load_ops");
    return 0;
}

/* The graph's input (g:input): one, of a kind the runtime reads. */
static int load_inputs(Program *p, lua_State *L, int g) {
    int top = lua_gettop(L);
    int list = push_sub(L, g, "inputs");
    int n = lua_istable(L, list) ? (int)lua_rawlen(L, list) : 0;
    if (n != 1) {
        wf_error("%s: plan.model: the model graph declares %d inputs; weft reads one "
                 "(valid: g:input { kind = \"tokens\" })", p->plan_path, n);
        lua_settop(L, top);
        return -1;
    }
    lua_rawgeti(L, list, 1);
    get_str(L, lua_gettop(L), "kind", p->input_kind, sizeof p->input_kind);
    lua_pop(L, 2);
    STACK_BALANCED(L, top, "load_inputs");
    return 0;
}

/* FNV-1a over the plan's source: names the plan in generated headers. */
static void hash_file(const char *path, char out[17]) {
    uint64_t h = 1469598103934665603ULL;
    FILE *f = fopen(path, "rb");
    if (f) {
        int ch;
        while ((ch = fgetc(f)) != EOF) h = (h ^ (uint64_t)ch) * 1099511628211ULL;
        fclose(f);
    }
    snprintf(out, 17, "%016llx", (unsigned long long)h);
}

int pass_load(Program *p, const char *path, const char *const *overrides, int n_overrides) {
    wf_sandbox sb;
    memset(p, 0, sizeof *p);
    if (strlen(path) >= sizeof p->plan_path) {  /* named in messages and programs: never cut short */
        wf_error("%.60s...: plan path too long (%zu bytes, at most %zu)", path, strlen(path),
                 sizeof p->plan_path - 1);
        return -1;
    }
    snprintf(p->plan_path, sizeof p->plan_path, "%s", path);
    if (sandbox_run(&sb, path, overrides, n_overrides) != 0) {
        sandbox_close(&sb);
        return -1;
    }
    lua_State *L = sb.L;
    int plan = lua_gettop(L);
    /* Only a table weft.plan returned counts, and what is read is the copy the
     * prelude kept of it as checked (the plan may have edited or forged it). */
    int is_plan = 0;
    if (lua_istable(L, plan) && lua_getfield(L, LUA_REGISTRYINDEX, "weft.plans") == LUA_TTABLE) {
        lua_pushvalue(L, plan);
        if (lua_rawget(L, -2) == LUA_TTABLE) {
            lua_replace(L, plan);
            is_plan = 1;
        } else {
            lua_pop(L, 1);
        }
    }
    lua_settop(L, plan);
    if (!is_plan) {
        wf_error("%s:%d: the plan must end with `return weft.plan { ... }` (it returned %s)",
                 path, sb.last_line, luaL_typename(L, plan));
        sandbox_close(&sb);
        return -1;
    }
    bad_field = 0;
    hash_file(path, p->plan_hash);
    get_str(L, plan, "name", p->plan_name, sizeof p->plan_name);
    if (!p->plan_name[0]) {
        /* the file's name, kept to what is safe in C, CMake and shell text */
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        size_t k = 0;
        for (const char *s = base; *s && *s != '.' && k + 1 < sizeof p->plan_name; s++)
            p->plan_name[k++] = (isalnum((unsigned char)*s) || *s == '-') ? *s : '_';
        p->plan_name[k] = 0;
    }

    int model = push_sub(L, plan, "model");
    get_str(L, model, "family", p->family, sizeof p->family);
    p->layers = (int)get_int(L, model, "layers");
    p->hidden = (int)get_int(L, model, "hidden");
    p->heads = (int)get_int(L, model, "heads");
    p->seq = (int)get_int(L, model, "seq");
    p->vocab = (int)get_int(L, model, "vocab");
    if (strcmp(p->family, "llama") == 0) {
        p->kv_heads = (int)get_int(L, model, "kv_heads");
        p->ffn_hidden = (int)get_int(L, model, "ffn_hidden");
        p->rope_theta = get_num(L, model, "rope_theta");
        p->norm_eps = get_num(L, model, "norm_eps");
    }
    lua_getfield(L, model, "image");  /* weft.vlm: the image the encoder reads */
    if (lua_istable(L, -1)) {
        int im = lua_gettop(L);
        p->image_h = (int)get_int(L, im, "height");
        p->image_w = (int)get_int(L, im, "width");
        p->image_c = (int)get_int(L, im, "channels");
        p->patch = (int)get_int(L, im, "patch");
        p->image_positions = (int)get_int(L, im, "positions");
        p->image_token = (int)get_int(L, im, "token");
    }
    lua_pop(L, 1);
    lua_getfield(L, model, "vision");  /* weft.vlm: its encoder's shape (config.json's vision_config) */
    if (lua_istable(L, -1)) {
        int v = lua_gettop(L);
        p->vit_layers = (int)get_int(L, v, "layers");
        p->vit_hidden = (int)get_int(L, v, "hidden");
        p->vit_heads = (int)get_int(L, v, "heads");
        p->vit_mlp = (int)get_int(L, v, "mlp");
    }
    lua_pop(L, 1);
    lua_getfield(L, model, "line");  /* where the plan called weft.gpt2 / weft.llama */
    int model_line = (int)lua_tointeger(L, -1);
    lua_pop(L, 1);
    int g = push_sub(L, model, "graph");
    if (load_params(p, L, g) != 0 || load_hf_consts(p, L, g) != 0 || load_ops(p, L, g, model_line) != 0 || load_inputs(p, L, g) != 0 ||
        user_kernel_check_all(p) != 0) {
        sandbox_close(&sb);
        return -1;
    }
    lua_settop(L, plan);  /* the model's tables are read */

    int mesh = push_sub(L, plan, "mesh");
    int size[WF_AXES];
    for (int k = 0; k < WF_AXES; k++) size[k] = (int)get_int(L, mesh, wf_axis_name(k));
    p->dp = size[WF_AXIS_DP], p->tp = size[WF_AXIS_TP], p->pp = size[WF_AXIS_PP];
    lua_getfield(L, mesh, "sp");
    p->sp = lua_toboolean(L, -1) && p->tp > 1;
    lua_pop(L, 1);
    lua_getfield(L, mesh, "order");  /* checked by the prelude, with this parser */
    const char *order = lua_tostring(L, -1);
    char problem[160], valid[200];
    p->n_axes = WF_AXES;
    if (wf_mesh_layout(order ? order : WF_MESH_DEFAULT_ORDER, size, p->axes, problem, sizeof problem, valid,
                       sizeof valid) != 0) {
        wf_error("internal: mesh.order \"%s\" %s", order ? order : "", problem);
        bad_field = 1;
    }
    lua_pop(L, 1);
    p->world = (int)get_int(L, plan, "world");
    lua_settop(L, plan);  /* one plan section on the stack at a time */
    int cluster = push_sub(L, plan, "cluster");
    p->nodes = (int)get_int(L, cluster, "nodes");
    p->devices_per_node = (int)get_int(L, cluster, "devices_per_node");
    char bind[16];
    get_str(L, cluster, "bind", bind, sizeof bind);  /* one of them: the prelude checked it */
    p->bind = wf_bind_mode(bind) < 0 ? WF_BIND_AUTO : wf_bind_mode(bind);
    int dev = push_sub(L, cluster, "device");
    get_str(L, dev, "name", p->device, sizeof p->device);
    p->device_fp32_tflops = get_num(L, dev, "fp32");
    p->device_memory_gib = get_num(L, dev, "memory_gib");
    p->device_tf32_tflops = get_num(L, dev, "tf32");
    p->device_fp16_tflops = get_num(L, dev, "fp16");
    p->device_bf16_tflops = get_num(L, dev, "bf16");
    p->device_hbm_gbs = get_num(L, dev, "hbm_gbs");
    p->device_sms = (int)get_num(L, dev, "sms");
    p->device_clock_mhz = get_num(L, dev, "clock_mhz");
    int intra = push_sub(L, cluster, "intra_link");
    p->intra_gbs = get_num(L, intra, "gbs");
    p->intra_latency_us = get_num(L, intra, "latency_us");
    p->intra_bus_gbs = get_num(L, intra, "bus_gbs");
    int inter = push_sub(L, cluster, "inter_link");
    p->inter_gbs = get_num(L, inter, "gbs");
    p->inter_latency_us = get_num(L, inter, "latency_us");
    p->inter_bus_gbs = get_num(L, inter, "bus_gbs");

    lua_settop(L, plan);
    int batch = push_sub(L, plan, "batch");
    p->micro = (int)get_int(L, batch, "micro");
    p->global_batch = (int)get_int(L, batch, "global");
    p->accum = (int)get_int(L, batch, "accum");

    lua_settop(L, plan);
    int opt = push_sub(L, plan, "optimizer");
    p->lr = get_num(L, opt, "lr");
    p->min_lr = get_num(L, opt, "min_lr");
    p->eps = get_num(L, opt, "eps");
    p->weight_decay = get_num(L, opt, "weight_decay");
    p->warmup = (int)get_int(L, opt, "warmup");
    int betas = push_sub(L, opt, "betas");
    lua_rawgeti(L, betas, 1);
    p->beta1 = lua_tonumber(L, -1);
    lua_rawgeti(L, betas, 2);
    p->beta2 = lua_tonumber(L, -1);
    lua_pop(L, 2);

    p->clip = get_num(L, plan, "clip_grad_norm");
    lua_settop(L, plan);
    int train = push_sub(L, plan, "train");
    p->steps = (int)get_int(L, train, "steps");
    p->log_every = (int)get_int(L, train, "log_every");
    p->ckpt_every = (int)get_int(L, train, "ckpt_every");
    p->seed = (uint64_t)get_int(L, train, "seed");
    lua_settop(L, plan);
    int fault = push_sub(L, plan, "fault");
    p->fault_timeout_s = get_num(L, fault, "timeout_s");
    lua_settop(L, plan);
    int data = push_sub(L, plan, "data");
    get_str(L, data, "train", p->data_train, sizeof p->data_train);
    get_str(L, plan, "precision", p->precision, sizeof p->precision);
    lua_settop(L, plan);
    int scale = push_sub(L, plan, "loss_scale");
    lua_getfield(L, scale, "dynamic");
    p->loss_scale_dynamic = lua_toboolean(L, -1);
    lua_pop(L, 1);
    p->loss_scale_initial = get_num(L, scale, "initial");
    p->loss_scale_min = get_num(L, scale, "min");
    p->loss_scale_window = (int)get_int(L, scale, "window");
    p->loss_scale_hysteresis = (int)get_int(L, scale, "hysteresis");
    lua_pop(L, 1);
    p->zero = (int)get_int(L, plan, "zero");
    p->zero_prefetch = (int)get_int(L, plan, "zero_prefetch");
    lua_getfield(L, plan, "zero_prefetch_mb");
    p->zero_prefetch_mb = lua_isnumber(L, -1) ? lua_tonumber(L, -1) : -1;
    lua_pop(L, 1);
    lua_settop(L, plan);
    int offload = push_sub(L, plan, "offload");
    char where[8];
    get_str(L, offload, "optimizer", where, sizeof where);
    p->offload_optimizer = strcmp(where, "cpu") == 0;
    get_str(L, offload, "params", where, sizeof where);
    p->offload_params = strcmp(where, "cpu") == 0;
    lua_pop(L, 1);
    char recompute[16];
    get_str(L, plan, "recompute", recompute, sizeof recompute);
    p->recompute = strcmp(recompute, "full") == 0 ? RECOMPUTE_FULL
                 : strcmp(recompute, "selective") == 0 ? RECOMPUTE_SELECTIVE : RECOMPUTE_NONE;
    lua_settop(L, plan);
    int pipe = push_sub(L, plan, "pipeline");
    get_str(L, pipe, "schedule", p->schedule, sizeof p->schedule);
    p->virt = p->pp > 1 ? (int)get_int(L, pipe, "virtual") : 1;  /* chunks only matter across stages */
    lua_getfield(L, pipe, "scatter_gather");  /* resolved by the prelude */
    p->scatter_gather = lua_toboolean(L, -1) && p->pp > 1 && p->tp > 1;
    lua_pop(L, 1);
    int stages = push_sub(L, pipe, "stages");
    if (lua_istable(L, stages) && p->pp > 1) {
        int n = (int)lua_rawlen(L, stages);
        p->chunk_layers = checked_calloc((size_t)n, sizeof(int), "pipeline.stages");
        if (!p->chunk_layers) {
            sandbox_close(&sb);
            return -1;
        }
        for (int i = 0; i < n; i++) {
            lua_rawgeti(L, stages, i + 1);
            p->chunk_layers[i] = (int)lua_tointeger(L, -1);
            lua_pop(L, 1);
        }
    }
    lua_settop(L, plan);
    int buckets = push_sub(L, plan, "buckets");
    p->bucket_mb = get_num(L, buckets, "mb");
    get_str(L, plan, "comm", p->comm, sizeof p->comm);
    get_str(L, plan, "tp_comm", p->tp_comm, sizeof p->tp_comm);
    get_str(L, plan, "grad_accum", p->grad_accum, sizeof p->grad_accum);
    get_str(L, plan, "param_storage", p->param_storage, sizeof p->param_storage);
    get_str(L, plan, "dp_comm", p->dp_comm, sizeof p->dp_comm);
    p->lmhead_chunk = (long)get_int(L, plan, "lmhead_chunk");
    lua_settop(L, plan);
    int nccl = push_sub(L, plan, "nccl");
    int n_env = (int)lua_rawlen(L, nccl);
    for (int i = 0; i < n_env && p->n_nccl_env < WF_MAX_NCCL_ENV; i++) {
        lua_rawgeti(L, nccl, i + 1);
        const char *e = lua_tostring(L, -1);
        snprintf(p->nccl_env[p->n_nccl_env++], sizeof p->nccl_env[0], "%s", e ? e : "");
        lua_pop(L, 1);
    }
    lua_settop(L, plan);
    STACK_BALANCED(L, plan, "pass_load");
    sandbox_close(&sb);
    return bad_field ? -1 : 0;
}
