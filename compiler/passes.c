/* passes.c: check, graph, buckets and memory, the passes between load and emit.
 * Each is a plain function over the Program. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "program.h"

const char *op_name(op_kind k) {
    static const char *const names[OP__COUNT] = {
        "embed", "layernorm", "linear", "attention", "gelu", "add", "lmhead_xent",
        "rmsnorm", "rope", "swiglu",
        "vocab_embed", "pos_add", "bias_add", "tp_copy", "tp_reduce", "tp_gather", "tp_scatter",
    };
    return (unsigned)k < OP__COUNT ? names[k] : "?";
}

static long in_width(const Program *p, const ir_op *o, int k) {
    return p->tensors[o->in[k]].width;
}

static int shape_error(const Program *p, int i, const char *what) {
    wf_error("%s: model graph op %d (%s): %s", p->plan_path, i, op_name(p->ops[i].kind), what);
    return -1;
}

/* ---- check: shapes along the graph, and sizes that must not overflow ---- */
int pass_check(Program *p) {
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        long out = p->tensors[o->out].width;
        for (int k = 0; k < o->n_in; k++)
            if (o->in[k] < 1 || o->in[k] >= p->n_tensors || p->tensors[o->in[k]].producer >= i)
                return shape_error(p, i, "reads a tensor that no earlier op produced");
        const ir_param *w = o->n_param > 0 ? &p->params[o->param[0]] : NULL;
        const ir_param *b = o->n_param > 1 ? &p->params[o->param[1]] : NULL;
        switch (o->kind) {
        case OP_EMBED:  /* token and position embeddings, or (llama) tokens only */
            if (w->shape[0] != p->vocab || w->shape[1] != out ||
                (b && (b->shape[1] != out || b->shape[0] != p->seq)))
                return shape_error(p, i, "embedding shapes disagree with the model width");
            break;
        case OP_RMSNORM:
            if (o->n_param != 1 || w->numel != in_width(p, o, 0) || out != in_width(p, o, 0) || !(o->eps > 0))
                return shape_error(p, i, "rmsnorm needs a weight as wide as its input and eps > 0");
            break;
        case OP_ROPE: {
            long hd = o->heads > 0 && o->kv_heads > 0 ? in_width(p, o, 0) / o->heads : 0;
            if (o->n_in != 2 || hd < 2 || hd % 2 || in_width(p, o, 0) != o->heads * hd ||
                in_width(p, o, 1) != o->kv_heads * hd || out != (o->heads + o->kv_heads) * hd)
                return shape_error(p, i, "rope needs q and k of heads and kv_heads even-sized heads");
            break;
        }
        case OP_SWIGLU:
            if (o->n_in != 2 || out != in_width(p, o, 0) || out != in_width(p, o, 1))
                return shape_error(p, i, "swiglu needs gate and up of its output width");
            break;
        case OP_LAYERNORM:
            if (w->numel != in_width(p, o, 0) || out != in_width(p, o, 0))
                return shape_error(p, i, "layernorm width differs from its input");
            break;
        case OP_LINEAR:
            if (w->shape[0] != in_width(p, o, 0) || w->shape[1] != out || (b && b->numel != out))
                return shape_error(p, i, "linear weight does not match its input and output");
            break;
        case OP_ATTENTION:
            if (o->n_in == 2) {  /* grouped-query: rotated q|k, and v */
                long hd = o->heads > 0 ? out / o->heads : 0;
                if (hd < 1 || out % o->heads || o->kv_heads < 1 || o->heads % o->kv_heads ||
                    in_width(p, o, 0) != (o->heads + o->kv_heads) * hd ||
                    in_width(p, o, 1) != o->kv_heads * hd)
                    return shape_error(p, i, "grouped-query attention needs (q|k, v) inputs of "
                                             "heads and kv_heads heads, kv_heads dividing heads");
                break;
            }
            if (in_width(p, o, 0) != 3 * out || o->heads < 1 || out % o->heads != 0)
                return shape_error(p, i, "attention needs (q,k,v) input and heads dividing width");
            break;
        case OP_GELU:
            if (out != in_width(p, o, 0)) return shape_error(p, i, "gelu changes width");
            break;
        case OP_ADD:
            if (out != in_width(p, o, 0) || out != in_width(p, o, 1))
                return shape_error(p, i, "residual add of different widths");
            break;
        case OP_LMHEAD_XENT:
            if (w->shape[0] != p->vocab || w->shape[1] != in_width(p, o, 0))
                return shape_error(p, i, "LM head weight must be (vocab, width)");
            if (i != p->n_ops - 1) return shape_error(p, i, "the loss must be the last op");
            break;
        default:
            return shape_error(p, i, "unknown op");
        }
    }
    if (p->n_ops == 0 || p->ops[p->n_ops - 1].kind != OP_LMHEAD_XENT) {
        wf_error("%s: the model graph must end in lm_head_xent", p->plan_path);
        return -1;
    }
    return 0;
}

/* ---- graph: backward is forward reversed; find when each gradient is final ---- */
/* Backward op j undoes forward op n-1-j.  A parameter's gradient is complete
 * after the backward of the earliest forward op that uses it (a tied
 * embedding gets gradients from the LM head first and the embedding last). */
static const Program *sort_ctx;

static int by_completion(const void *a, const void *b) {
    const ir_param *pa = &sort_ctx->params[*(const int *)a];
    const ir_param *pb = &sort_ctx->params[*(const int *)b];
    if (pa->last_grad_op != pb->last_grad_op) return pa->last_grad_op - pb->last_grad_op;
    return *(const int *)a - *(const int *)b;
}

/* Elements of a token embedding that only the lookup uses (0 when tied). */
long untied_embedding(const Program *p) {
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        if (o->kind != OP_EMBED && o->kind != OP_VOCAB_EMBED) continue;
        for (int j = 0; j < p->n_ops; j++) {  /* the LM head's weight, or the copy of it */
            if (p->ops[j].kind != OP_LMHEAD_XENT) continue;
            int w = p->ops[j].param[0];
            if (w == o->param[0] || p->params[w].tied_to == o->param[0]) return 0;
        }
        long whole = 1;
        for (int d = 0; d < p->params[o->param[0]].ndim; d++) whole *= p->params[o->param[0]].gshape[d];
        return whole < p->n_param_total ? whole : 0;
    }
    return 0;
}

int pass_graph(Program *p) {
    for (int i = 0; i < p->n_params; i++) p->params[i].last_grad_op = -1;
    for (int i = p->n_ops - 1; i >= 0; i--) {
        int bwd_index = p->n_ops - 1 - i;
        for (int k = 0; k < p->ops[i].n_param; k++)
            p->params[p->ops[i].param[k]].last_grad_op = bwd_index;
    }
    p->n_param_total = 0;
    for (int i = 0; i < p->n_params; i++) {
        if (p->params[i].last_grad_op < 0) {
            wf_error("%s: parameter %s is never used by the model graph",
                     p->plan_path, p->params[i].name);
            return -1;
        }
        long whole = 1;  /* the full tensor, whatever tensor parallelism splits */
        for (int d = 0; d < p->params[i].ndim; d++) whole *= p->params[i].gshape[d];
        if (p->params[i].tied_to < 0) p->n_param_total += whole;
    }
    p->grad_order = malloc(sizeof(int) * (size_t)p->n_params);
    for (int i = 0; i < p->n_params; i++) p->grad_order[i] = i;
    sort_ctx = p;
    qsort(p->grad_order, (size_t)p->n_params, sizeof(int), by_completion);
    /* Model FLOPs per token: 6N for the matmuls over all weights (the tied
     * embedding counts once, as the LM head) plus 12 L h s for attention.  An
     * untied token embedding (llama) is a lookup, not a matmul: left out. */
    p->flops_per_token = 6.0 * (double)(p->n_param_total - untied_embedding(p))
                       + 12.0 * p->layers * (double)p->hidden * p->seq;
    fuse_residual_layernorm(p);
    fuse_linear_gelu(p);
    fuse_linear_dgelu(p);
    return 0;
}

/* ---- buckets: gradients laid out in completion order, cut into buckets ---- */
/* Each pipeline stage has its own parameter arena and buckets.  Under ZeRO
 * with pipeline parallelism the tied wte (and its copy on the last stage)
 * gets a bucket of its own, so that both copies are sharded alike and their
 * gradients can be summed shard by shard; from ZeRO-2 on a bucket also never
 * spans two chunks, so that one chunk's backward writes all of it. */
static int is_tied(const Program *p, int k) {
    if (p->params[k].tied_to >= 0) return 1;
    for (int j = 0; j < p->n_params; j++)
        if (p->params[j].tied_to == k) return 1;
    return 0;
}

int pass_buckets(Program *p) {
    double cap_bytes = p->bucket_mb * 1024.0 * 1024.0;
    for (int k = 0; k < p->n_params; k++) p->params[k].chunk = -1;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_param; k++)
            if (p->params[p->ops[i].param[k]].chunk < 0) p->params[p->ops[i].param[k]].chunk = p->ops[i].chunk;
    int alone_tied = p->zero > 0 && p->pp > 1;
    p->buckets = calloc((size_t)p->n_params, sizeof *p->buckets);
    p->param_numel = calloc((size_t)p->pp, sizeof(long));
    p->n_buckets = 0;
    /* buckets.mb counts gradient bytes as the plan stores them: 16-bit modes 2 a value */
    double el = strcmp(p->precision, "fp32") == 0 ? 4.0 : 2.0;
    for (int stage = 0; stage < p->pp; stage++) {
        long offset = 0;
        ir_bucket *cur = NULL;
        for (int r = 0; r < p->n_params; r++) {
            ir_param *q = &p->params[p->grad_order[r]];
            if (q->stage != stage) continue;
            double bytes = el * (double)q->numel;
            /* a parameter larger than the cap gets a bucket of its own */
            int tied = alone_tied && is_tied(p, p->grad_order[r]);
            int cut = !cur || el * (double)cur->numel + bytes > cap_bytes || tied ||
                      (alone_tied && is_tied(p, p->grad_order[cur->last_param])) ||
                      (p->zero >= 2 && p->params[p->grad_order[cur->last_param]].chunk != q->chunk);
            if (cut) {
                cur = &p->buckets[p->n_buckets++];
                cur->offset = offset;
                cur->first_param = r;
                cur->stage = stage;
            }
            q->offset = offset;
            q->bucket = (int)(cur - p->buckets);
            cur->numel += q->numel;
            cur->last_param = r;
            cur->ready_after_op = q->last_grad_op;
            offset += q->numel;
        }
        p->param_numel[stage] = offset;
    }
    return 0;
}

/* ---- memory: one activation slot per in-flight microbatch, offsets fixed here ---- */
static long align16(long n) { return (n + 15) & ~15L; }

static int tensor_stage(const Program *p, int t) {
    return p->ops[p->tensors[t].producer].chunk % p->pp;
}

/* Under full recompute a block's internal activations (everything it makes
 * that no other block reads) are dropped after forward and rebuilt from the
 * block's input just before its backward, so all blocks share one region. */
static int block_internal(const Program *p, int t) {
    int layer = p->ops[p->tensors[t].producer].layer;
    if (p->recompute != RECOMPUTE_FULL || layer < 0) return 0;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_in; k++)
            if (p->ops[i].in[k] == t && p->ops[i].layer != layer) return 0;
    return 1;
}

/* A tensor's place in its arena: its storage floats (half under act16),
 * aligned to 16 floats (64 bytes: vector loads and cuBLASLt like it). */
static long tensor_numel(const Program *p, int t) {
    return align16(tensor_storage(p, t));
}

int attention_saves_lse(const Program *p, const ir_op *o) {
    return o->kind == OP_ATTENTION && backend_of(p)->attention_lse;  /* GPT-2's and GQA's */
}

static long saved_numel(const Program *p, const ir_op *o) {
    long N = (long)p->micro * p->seq;
    switch (o->kind) {
    case OP_LAYERNORM: return 2 * N / p->tensors[o->out].rows_div;  /* mean, rstd */
    case OP_RMSNORM: return N / p->tensors[o->out].rows_div;        /* rstd */
    case OP_ATTENTION:  /* log-sum-exp per query row, or the probabilities */
        if (attention_saves_lse(p, o)) return (long)p->micro * o->heads * p->seq;
        return (long)p->micro * o->heads * p->seq * p->seq;
    case OP_LMHEAD_XENT:  /* dlogits: the plan's 16-bit type under act16 */
        return act_storage(p, N * (p->vocab_padded / p->tp));
    default: return 0;
    }
}

/* Lays out the shared region from `base` (tensors if `saved` is 0, saved
 * buffers otherwise); returns its size. */
static long lay_out_shared(Program *p, int stage, long base, int saved) {
    long size = 0;
    for (int layer = 0; layer < p->layers; layer++) {
        long off = base;
        for (int i = 0; i < p->n_ops; i++) {
            ir_op *o = &p->ops[i];
            if (o->layer != layer || o->chunk % p->pp != stage || !block_internal(p, o->out)) continue;
            if (saved) {
                o->saved_offset = off;
                off += align16(o->saved_numel);
            } else {
                p->tensors[o->out].offset = off;
                off += tensor_numel(p, o->out);
            }
        }
        if (off - base > size) size = off - base;
    }
    return size;
}

/* The output of a gelu whose backward is in c_proj's input gradient (fuse.c,
 * DGELU pair) has no gradient: nothing forms or reads it, so it is laid out
 * after the prefix the activation-gradient slot mirrors. */
static int carries_grad(const Program *p, int t) {
    return p->ops[p->tensors[t].producer].dgelu != DGELU_GELU;
}

int pass_memory(Program *p) {
    p->act16 = act16_decide(p);  /* before any size: it halves the activations */
    p->act_numel = calloc((size_t)p->pp, sizeof(long));
    p->dact_numel = calloc((size_t)p->pp, sizeof(long));
    p->shared_offset = calloc((size_t)p->pp, sizeof(long));
    p->shared_numel = calloc((size_t)p->pp, sizeof(long));
    for (int i = 0; i < p->n_ops; i++) p->ops[i].saved_numel = saved_numel(p, &p->ops[i]);
    for (int stage = 0; stage < p->pp; stage++) {
        long off = 0;
        /* activations that carry gradients come first: the activation-gradient
         * slot mirrors exactly this prefix; a chunk's received input too */
        for (int t = 1; t < p->n_tensors; t++) {
            if (tensor_stage(p, t) != stage || block_internal(p, t) || !carries_grad(p, t)) continue;
            p->tensors[t].offset = off;
            off += tensor_numel(p, t);
        }
        p->shared_offset[stage] = off;
        p->shared_numel[stage] = lay_out_shared(p, stage, off, 0);
        off += p->shared_numel[stage];
        for (int k = 0; k < p->n_chunks; k++) {
            int t = p->chunk_in[k];
            if (!t || k % p->pp != stage) continue;
            p->chunk_in_offset[k] = off;
            off += tensor_numel(p, t);
        }
        p->dact_numel[stage] = off;
        for (int t = 1; t < p->n_tensors; t++) {
            if (tensor_stage(p, t) != stage || block_internal(p, t) || carries_grad(p, t)) continue;
            p->tensors[t].offset = off;
            off += tensor_numel(p, t);
        }
        /* selective recompute: the attention probabilities of every layer
         * share one buffer, refilled just before each attention's backward */
        long att_shared = 0;
        for (int i = 0; i < p->n_ops; i++) {
            ir_op *o = &p->ops[i];
            if (o->chunk % p->pp != stage || block_internal(p, o->out)) continue;
            if (p->recompute == RECOMPUTE_SELECTIVE && o->kind == OP_ATTENTION) {
                if (o->saved_numel > att_shared) att_shared = o->saved_numel;
                continue;
            }
            o->saved_offset = off;
            off += align16(o->saved_numel);
        }
        for (int i = 0; i < p->n_ops; i++)
            if (p->recompute == RECOMPUTE_SELECTIVE && p->ops[i].kind == OP_ATTENTION &&
                p->ops[i].chunk % p->pp == stage)
                p->ops[i].saved_offset = off;
        off += align16(att_shared);
        off += lay_out_shared(p, stage, off, 1);
        p->act_numel[stage] = off;
    }
    long N = (long)p->micro * p->seq;
    /* attention backward: one head's (T, T) dP on the CPU; on CUDA the
     * rowsum(P * dP) of every query row (the largest layer's) */
    long scratch = 16;
    for (int i = 0; i < p->n_ops; i++) {
        const ir_op *o = &p->ops[i];
        long need = attention_saves_lse(p, o) ? o->saved_numel
                  : o->kind == OP_ATTENTION ? (long)p->seq * p->seq : 0;
        if (need > scratch) scratch = need;
    }
    p->scratch_numel = align16(scratch);
    /* tensor-parallel collectives stage a whole (N, width) tensor here (in
     * floats; under act16 the widened 16-bit values), and the vocabulary-
     * parallel loss its per-token statistics; under act16 a sequence-parallel
     * gather or reduce-scatter also stages one rank's piece after the whole
     * (runtime/common/tp.c) */
    long widest = 6;
    for (int i = 0; i < p->n_ops; i++) {
        op_kind k = p->ops[i].kind;
        long width = p->tensors[p->ops[i].out].width;
        if ((k == OP_TP_COPY || k == OP_TP_REDUCE || k == OP_TP_GATHER || k == OP_TP_SCATTER) && width > widest)
            widest = width;
    }
    long whole = N * widest;
    p->comm_numel = p->tp > 1 ? align16(whole) : 0;
    if (p->tp > 1 && p->act16 && p->sp) p->comm_numel += align16((whole + p->tp - 1) / p->tp);
    p->cast_numel = calloc((size_t)p->pp, sizeof(long));
    p->weight16_numel = calloc((size_t)p->pp, sizeof(long));
    for (int stage = 0; stage < p->pp; stage++) {
        p->cast_numel[stage] = act16_cast_numel(p, stage);
        p->weight16_numel[stage] = act16_weight16_numel(p, stage);
    }
    return 0;
}

void program_free(Program *p) {
    free(p->params);
    free(p->ops);
    free(p->tensors);
    free(p->grad_order);
    free(p->buckets);
    free(p->param_numel);
    free(p->act_numel);
    free(p->dact_numel);
    free(p->chunk_layers);
    free(p->chunk_first_op);
    free(p->chunk_end_op);
    free(p->chunk_in);
    free(p->chunk_out);
    free(p->chunk_in_offset);
    free(p->shared_offset);
    free(p->shared_numel);
    free(p->shard_numel);
    free(p->grad_buf_numel);
    free(p->gather_numel);
    free(p->gathers);
    free(p->cast_numel);
    free(p->weight16_numel);
    if (p->sched) schedule_free(p->sched);
    free(p->sched);
    memset(p, 0, sizeof *p);
}
