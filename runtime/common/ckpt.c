/* ckpt.c: checkpoints as a folder that Hugging Face and PyTorch tools read:
 *   model.safetensors      full tensors, named and shaped as in HF GPT-2
 *   optimizer.safetensors  AdamW moments ("exp_avg.NAME", "exp_avg_sq.NAME")
 *                          (pp > 1: a Hugging Face sharded set each, one
 *                          shard a pipeline stage, written by that stage's
 *                          writer under its final name, and an index that
 *                          world rank 0 writes (ckpt_shards.h); nothing is
 *                          joined or copied twice)
 *   config.json            the compiler's GPT2Config, LlamaConfig or (weft.vlm)
 *                          LlavaConfig, carried by the program (projection
 *                          weights, (in, out) in weft, are saved transposed,
 *                          (out, in), as HF's nn.Linear keeps them; a fused
 *                          q|k|v as three tensors; a VLM's stage 0 adds the
 *                          constants HF's SigLIP has and Weft does not use)
 *   manifest.json          the step, data position, plan hash, config, and
 *                          every file's size and CRC-32C, every tensor's shape
 *                          and CRC-32C (ckpt_manifest.h): a load verifies it all
 *   .weft-checkpoint       the marker: Weft wrote this folder and may replace it
 * The step, the data position and the model's shape also travel as
 * safetensors metadata.  The folder is written under a temporary name and
 * swapped in (ckpt_folder.h), so a failed or killed save leaves the previous
 * checkpoint as it was, and a folder Weft did not write is never replaced. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_folder.h"
#include "ckpt_manifest.h"
#include "ckpt_peak.h"
#include "ckpt_shards.h"
#include "convert16.h"
#include "internal.h"
#include "safetensors.h"

/* A path from a format, or a fatal error: never a truncated path. */
#define CKPT_PATH(c, buf, ...)                                                            \
    do {                                                                                  \
        char why_[512];                                                                   \
        if (wf_path_fmt(buf, sizeof buf, why_, sizeof why_, __VA_ARGS__) != 0)            \
            wf_fatal(c, "checkpoint", WF_WHERE, "%s", why_);                              \
    } while (0)

/* Offsets of each parameter's whole tensor in a buffer holding them all. */
static long whole_offsets(const wf_program *p, long *off) {
    long total = 0;
    for (int k = 0; k < p->n_params; k++) {
        off[k] = total;
        total += wf_whole_numel(&p->params[k]);
    }
    return total;
}

/* rows x cols (row-major) -> cols x rows, in place through a copy. */
static void transpose(wf_ctx *c, float *m, long rows, long cols) {
    float *tmp = wf_startup_alloc(c, sizeof(float) * (size_t)(rows * cols), "checkpoint transpose");
    memcpy(tmp, m, sizeof(float) * (size_t)(rows * cols));
    for (long r = 0; r < rows; r++)
        for (long k = 0; k < cols; k++) m[k * rows + r] = tmp[r * cols + k];
    wf_startup_free(tmp);
}

/* The name section s (0 .. sections(q) - 1) of parameter q has in a file,
 * after prefix: its own, or for a fused q|k|v ("qkv") its "qkv_proj" read as
 * q_proj, k_proj or v_proj. */
static int sections_of(const wf_param *q) { return q->qkv ? 3 : 1; }

static void saved_name(const wf_param *q, int s, const char *prefix, char *out, size_t n) {
    const char *at = q->qkv ? strstr(q->name, "qkv_proj") : NULL;
    if (!at) {
        snprintf(out, n, "%s%s", prefix, q->name);
        return;
    }
    snprintf(out, n, "%s%.*s%c%s", prefix, (int)(at - q->name), q->name, "qkv"[s], at + 1 + 2);
}

/* A parameter's tensors as the file holds them (transposed ones (out, in)):
 * whole[0 .. numel) in the file's layout is its sections one after another,
 * each shape[0] / sections rows. */
static void file_shape(const wf_param *q, long *shape) {
    memcpy(shape, q->gshape, sizeof(long) * 4);
    if (q->transposed) {
        shape[0] = q->gshape[1];
        shape[1] = q->gshape[0];
    }
    shape[0] /= sections_of(q);
}

/* Appends this stage's saved tensors (not the tied copies their owner saves)
 * to t; returns how many. */
static int fill_tensors(const wf_ctx *c, const float *whole, const long *off, wf_st_tensor *t,
                        char (*names)[128], const char *prefix) {
    const wf_program *p = c->p;
    int n = 0;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (q->tied && q->tied != 1) continue;
        long shape[4];
        file_shape(q, shape);
        long part = wf_whole_numel(q) / sections_of(q);
        for (int s = 0; s < sections_of(q); s++, n++) {
            saved_name(q, s, prefix, names[n], 128);
            t[n].name = names[n];
            t[n].ndim = q->ndim;
            memcpy(t[n].shape, shape, sizeof t[n].shape);
            t[n].data = whole ? whole + off[k] + s * part : NULL;  /* NULL: streamed */
        }
    }
    return n;
}

/* Stage 0's Hugging Face constants (wf_hf_const), appended to t; the values
 * live in *buf (the caller frees it), a copy's in whole; buf NULL: the names
 * and shapes alone (a streamed save writes the values, const_values). */
static int fill_consts(wf_ctx *c, const float *whole, const long *off, wf_st_tensor *t, float **buf) {
    const wf_program *p = c->p;
    long total = 0;
    for (int i = 0; i < p->n_hf_consts; i++) {
        long numel = 1;
        for (int d = 0; d < p->hf_consts[i].ndim; d++) numel *= p->hf_consts[i].shape[d];
        total += numel;
    }
    float *at = NULL;
    if (buf) at = *buf = wf_host_alloc(c, sizeof(float) * (size_t)(total ? total : 1), "checkpoint constants");
    for (int i = 0; i < p->n_hf_consts; i++) {
        const wf_hf_const *h = &p->hf_consts[i];
        long numel = 1;
        for (int d = 0; d < h->ndim; d++) numel *= h->shape[d];
        for (long j = 0; at && j < numel; j++) at[j] = h->value;
        t[i].name = h->name;
        t[i].ndim = h->ndim;
        memset(t[i].shape, 0, sizeof t[i].shape);
        memcpy(t[i].shape, h->shape, sizeof(long) * (size_t)h->ndim);
        t[i].data = at;
        for (int k = 0; whole && h->copy && k < p->n_params; k++)  /* the program's own: never absent */
            if (strcmp(p->params[k].name, h->copy) == 0) t[i].data = whole + off[k];
        if (at) at += numel;
    }
    return p->n_hf_consts;
}

static int is_llama(const wf_program *p) { return p->family && strcmp(p->family, "llama") == 0; }

/* config.json: the compiler wrote it (hf_config.c) and the program carries
 * its text; the checkpoint gets the same file. */
static void write_config(const wf_ctx *c, const char *dir) {
    const wf_program *p = c->p;
    if (!p->hf_config) wf_fatal(c, "config.json", WF_WHERE, "the program carries no config.json (recompile it)");
    char path[PATH_MAX];
    CKPT_PATH(c, path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) wf_fatal(c, "fopen", WF_WHERE, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(p->hf_config);
    if (fwrite(p->hf_config, 1, n, f) != n || fflush(f) != 0 || fsync(fileno(f)) != 0) {
        fclose(f);
        wf_fatal(c, "fwrite", WF_WHERE, "writing %s failed: %s", path, strerror(errno));
    }
    if (fclose(f) != 0) wf_fatal(c, "fclose", WF_WHERE, "writing %s failed", path);
}

/* Metadata every checkpoint file carries (strings live in `buf`). */
typedef struct {
    char step[32], position[32], shape[128], seed[32];
    char scale[40], hyst[24], good[24], skipped[24];  /* fp16's loss scaler */
    const char *kv[20];
    int n;  /* key-value pairs in kv */
} ckpt_meta;

static void make_meta(const wf_ctx *c, ckpt_meta *m) {
    const wf_program *p = c->p;
    snprintf(m->step, sizeof m->step, "%ld", c->step);
    snprintf(m->position, sizeof m->position, "%ld", c->step * (long)p->global_batch);
    if (is_llama(p))
        snprintf(m->shape, sizeof m->shape, "llama L%d h%d heads%d kv%d ffn%d seq%d vocab%d", p->layers,
                 p->hidden, p->heads, p->kv_heads, p->ffn_hidden, p->seq, p->vocab);
    else
        snprintf(m->shape, sizeof m->shape, "gpt2 L%d h%d heads%d seq%d vocab%d", p->layers, p->hidden,
                 p->heads, p->seq, p->vocab);
    snprintf(m->seed, sizeof m->seed, "%llu", (unsigned long long)p->seed);
    const char *kv[12] = { "format", "pt", "weft_step", m->step, "weft_samples_seen", m->position,
                           "weft_model", m->shape, "weft_seed", m->seed, "weft_plan", p->plan };
    memcpy(m->kv, kv, sizeof kv);
    m->n = 6;
    if (p->precision == WF_FP16) {  /* so that a resume continues the same scale */
        snprintf(m->scale, sizeof m->scale, "%.17g", c->scaler.scale);
        snprintf(m->hyst, sizeof m->hyst, "%d", c->scaler.hysteresis);
        snprintf(m->good, sizeof m->good, "%ld", c->scaler.good_steps);
        snprintf(m->skipped, sizeof m->skipped, "%ld", c->scaler.skipped);
        const char *more[8] = { "weft_loss_scale", m->scale, "weft_scale_hysteresis", m->hyst,
                                "weft_scale_good_steps", m->good, "weft_skipped_steps", m->skipped };
        memcpy(m->kv + 12, more, sizeof more);
        m->n = 10;
    }
}

/* wf_st_write, and where known is given (world rank 0, whose files the
 * manifest lists) the checksums it took while writing, under the file's name. */
static void write_st(wf_ctx *c, const char *dir, const char *name, const wf_st_tensor *t, int n,
                     const ckpt_meta *meta, wf_manifest_known *known) {
    char path[PATH_MAX], err[PATH_MAX + 512];
    CKPT_PATH(c, path, "%s/%s", dir, name);
    wf_st_sums sums = { 0 };
    if (known) sums.tensor_crc = wf_host_alloc(c, sizeof(uint32_t) * (size_t)(n ? n : 1), "checkpoint checksums");
    if (wf_st_write_sums(path, t, n, meta->kv, meta->n, known ? &sums : NULL, err, sizeof err) != 0)
        wf_fatal(c, "wf_st_write", WF_WHERE, "%s", err);
    if (known && wf_manifest_known_add(known, name, t, n, &sums) != 0)
        wf_fatal(c, "checkpoint", WF_WHERE, "out of memory recording the checksums of %s", path);
    free(sums.tensor_crc);
}

/* Writes this stage's whole tensors (not the tied copies its owner saves) as
 * DIR/NAME.safetensors for the model and the optimizer state. */
static void write_files(wf_ctx *c, const char *dir, const char *model_name, const char *optim_name,
                        const float *ww, const float *wm, const float *wv, const float *wd,
                        const long *off, wf_manifest_known *known) {
    const wf_program *p = c->p;
    ckpt_meta meta;
    make_meta(c, &meta);
    /* at most 3 tensors a parameter (a fused q|k|v), in up to 3 sets */
    size_t most = 9 * (size_t)p->n_params + (size_t)p->n_hf_consts;
    wf_st_tensor *t = wf_host_alloc(c, sizeof *t * most, "checkpoint index");
    char (*names)[128] = wf_host_alloc(c, 128 * most, "checkpoint names");
    float *consts = NULL;
    int n = fill_tensors(c, ww, off, t, names, "");
    n += fill_consts(c, ww, off, t + n, &consts);  /* Hugging Face's, in the model file only */
    write_st(c, dir, model_name, t, n, &meta, known);
    free(consts);
    n = fill_tensors(c, wm, off, t, names, "exp_avg.");
    n += fill_tensors(c, wv, off, t + n, names + n, "exp_avg_sq.");
    /* PipeDream-2BW: the older weight version too, so that a resume continues exactly */
    if (wd) n += fill_tensors(c, wd, off, t + n, names + n, "delayed.");
    write_st(c, dir, optim_name, t, n, &meta, known);
    free(t);
    free(names);
}

static void stage_names(const wf_ctx *c, char *model, char *optim, size_t n, int stage);

/* ---- the save's host memory, counted ------------------------------------
 * Every buffer of tensor data the save makes comes from save_alloc, so that
 * its peak can be compared with the bound weft check states (ckpt_peak.h).
 * Atomic: an --async-save thread frees what the step boundary copied. */
static size_t save_now, save_peak;

static void *save_alloc(const wf_ctx *c, size_t bytes, const char *what) {
    size_t *h = wf_host_alloc(c, bytes + 16, what);  /* 16: the size, and floats stay aligned */
    h[0] = bytes;
    size_t now = __atomic_add_fetch(&save_now, bytes, __ATOMIC_RELAXED);
    for (size_t was = __atomic_load_n(&save_peak, __ATOMIC_RELAXED); now > was;)
        if (__atomic_compare_exchange_n(&save_peak, &was, now, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;
    return (char *)h + 16;
}

static void save_free(void *q) {
    if (!q) return;
    size_t *h = (size_t *)(void *)((char *)q - 16);
    __atomic_sub_fetch(&save_now, h[0], __ATOMIC_RELAXED);
    free(h);
}

/* This stage's largest whole tensor and largest tp shard, in floats. */
static void largest(const wf_program *p, long *whole_max, long *local_max) {
    *whole_max = *local_max = 1;
    for (int k = 0; k < p->n_params; k++) {
        if (wf_whole_numel(&p->params[k]) > *whole_max) *whole_max = wf_whole_numel(&p->params[k]);
        if (p->params[k].numel > *local_max) *local_max = p->params[k].numel;
    }
}

/* What ckpt_peak.h allows this rank (held: --async-save's copy, else 0). */
static double save_bound(const wf_ctx *c, double held) {
    long w, l;
    largest(c->p, &w, &l);
    return wf_ckpt_save_peak((double)w, (double)l, c->p->tp, c->dp_rank, c->tp_rank, held);
}

/* Every rank's save peak beside its bound, logged by root (peak_report.c;
 * the checkpoint itself is written either way). */
static void report_peak(wf_ctx *c, const char *what, double bound) {
    char label[64];
    snprintf(label, sizeof label, "checkpoint: %s", what);
    wf_report_peaks(c, label, (double)__atomic_load_n(&save_peak, __ATOMIC_RELAXED), bound);
}

/* ---- one tensor's whole value, streamed ----------------------------------- */

enum { SRC_WEIGHTS, SRC_M, SRC_V, SRC_DELAYED };

/* Where a rank's values of parameter k live: all of its tp shard (`full`,
 * every dp rank holding it), or its ZeRO piece [own_lo, own_hi) (`piece`);
 * fp32, or 16-bit bits (param16.c). */
typedef struct {
    const void *full, *piece;
    int bits16;
} source;

static source shard_source(const wf_ctx *c, int k, float *shard) {
    int b16 = c->p->param16;
    source s = { NULL, b16 ? wf_params16_at(shard, c->moment_base[k]) : (void *)(shard + c->moment_base[k]), b16 };
    return s;
}

static source source_of(const wf_ctx *c, int k, int kind) {
    const wf_program *p = c->p;
    const wf_param *q = &p->params[k];
    source s = { NULL, NULL, 0 };
    int frozen = q->bucket < 0;  /* weft.vlm: whole fp32 on every rank, no optimizer state */
    /* the compiler never stores a plan with frozen weights in 16 bits
     * (param16_decide), so they are read as floats below in every version */
    if (frozen && p->param16)
        wf_fatal(c, "checkpoint", WF_WHERE, "parameter %s is frozen in a 16-bit parameter arena (recompile)", q->name);
    switch (kind) {
    case SRC_M: s.piece = c->adam_m + c->moment_base[k]; break;
    case SRC_V: s.piece = c->adam_v + c->moment_base[k]; break;
    case SRC_WEIGHTS: {  /* the newest version; 16-bit modes save the fp32 masters */
        const float *newest = p->weight_delay ? c->next_params : c->params;
        if (frozen) s.full = p->zero >= 3 ? c->params + wf_frozen_at(p, k) : newest + q->offset;
        else if (c->master) s.piece = c->master + c->moment_base[k];
        else if (p->zero >= 3) s = shard_source(c, k, p->weight_delay ? c->next_shard : c->param_shard);
        else s.full = newest + q->offset;
        break;
    }
    default:  /* SRC_DELAYED: 2BW's older version, which no master holds */
        if (p->zero >= 3) {
            if (frozen) s.full = c->params + wf_frozen_at(p, k);
            else s = shard_source(c, k, c->param_shard);
        } else if (p->param16) {  /* (never frozen: above) */
            s.full = wf_params16_at(c->params, q->offset);
            s.bits16 = 1;
        } else s.full = c->params + q->offset;
    }
    return s;
}

/* --async-save: this rank's own pieces of every tensor (what source_of
 * names, as floats), copied at the step boundary so that a thread can stream
 * them while training changes the originals.  at[kind * n_params + k] is the
 * offset of (kind, k) in base, -1 where this rank reads nothing of it. */
typedef struct {
    float *base;
    long *at;
    char *full;  /* source_of gave `full` (else `piece`) */
} held_copy;

static source held_source(const wf_ctx *c, const held_copy *h, int k, int kind) {
    long i = (long)kind * c->p->n_params + k;
    const float *x = h->at[i] >= 0 ? h->base + h->at[i] : NULL;
    source s = { h->full[i] ? x : NULL, h->full[i] ? NULL : x, 0 };
    return s;
}

/* n values of a source as floats at dst */
static void as_floats(const wf_ctx *c, float *dst, const void *src, int bits16, long n) {
    if (bits16) wf_widen16(c->p->precision, dst, src, n);
    else memcpy(dst, src, sizeof(float) * (size_t)n);
}

/* The buffers one tensor needs (ckpt_peak.h), from save_alloc. */
typedef struct {
    float *piece, *local, *parts;
    int *counts, *displs;
} tensor_bufs;

static void bufs_get(const wf_ctx *c, tensor_bufs *b) {
    const wf_program *p = c->p;
    long w, l;
    largest(p, &w, &l);
    memset(b, 0, sizeof *b);
    b->piece = save_alloc(c, sizeof(float) * (size_t)l, "checkpoint piece");
    if (c->dp_rank != 0) return;
    b->local = save_alloc(c, sizeof(float) * (size_t)l, "checkpoint tp shard");
    b->counts = wf_host_alloc(c, sizeof(int) * 2 * (size_t)p->dp, "checkpoint counts");
    b->displs = b->counts + p->dp;
    if (c->tp_rank == 0 && p->tp > 1)
        b->parts = save_alloc(c, sizeof(float) * (size_t)l, "checkpoint tp shard received");
}

static void bufs_free(tensor_bufs *b) {
    save_free(b->piece);
    save_free(b->local);
    save_free(b->parts);
    free(b->counts);
}

/* MPI counts are ints: a tensor's transfers go in windows of at most this
 * many floats (2^30: 4 GiB), so that a shard above 2^31 - 1 floats is still
 * sent whole.  WEFT_CKPT_WINDOW (floats, >= 1) lowers it, so that the tests
 * run the windows on small tensors. */
static long window_floats(wf_ctx *c) {
    static long w;
    if (w) return w;
    w = 1L << 30;
    const char *env = getenv("WEFT_CKPT_WINDOW");
    if (env && *env) {
        char *end;
        long v = strtol(env, &end, 10);
        if (*end || v < 1 || v > (1L << 30))
            wf_fatal(c, "checkpoint", WF_WHERE, "WEFT_CKPT_WINDOW wants floats in 1 .. 2^30, got '%s'", env);
        w = v;
    }
    return w;
}

/* The dp group's ZeRO pieces of parameter k gathered into dp 0's local,
 * window by window: in each, every rank sends what of its own range
 * [own_lo, own_hi) falls inside. */
static void gather_pieces(wf_ctx *c, int k, const float *piece, tensor_bufs *b) {
    const wf_program *p = c->p;
    long numel = p->params[k].numel, w = window_floats(c), lo = c->own_lo[k], hi = c->own_hi[k];
    for (long w0 = 0; w0 < numel; w0 += w) {
        long w1 = w0 + w < numel ? w0 + w : numel;
        long mlo = lo > w0 ? lo : w0, mhi = hi < w1 ? hi : w1;
        for (int r = 0; c->dp_rank == 0 && r < p->dp; r++) {
            long rlo, rhi;
            wf_zero_own_range(p, k, r, &rlo, &rhi);
            if (rlo < w0) rlo = w0;
            if (rhi > w1) rhi = w1;
            b->displs[r] = (int)(rlo - w0);
            b->counts[r] = rhi > rlo ? (int)(rhi - rlo) : 0;
        }
        WF_MPI(c, MPI_Gatherv(piece + (mhi > mlo ? mlo - lo : 0), mhi > mlo ? (int)(mhi - mlo) : 0, MPI_FLOAT,
                              c->dp_rank == 0 ? b->local + w0 : NULL, b->counts, b->displs, MPI_FLOAT, 0,
                              c->group_comm[WF_GROUP_DP]));
    }
}

/* n floats to (send) or from tp rank `peer`, window by window. */
static void tp_transfer(wf_ctx *c, float *buf, long n, int peer, int send) {
    long w = window_floats(c);
    for (long at = 0; at < n; at += w) {
        int m = (int)(n - at < w ? n - at : w);
        if (send) WF_MPI(c, MPI_Send(buf + at, m, MPI_FLOAT, peer, 0, c->group_comm[WF_GROUP_TP]));
        else WF_MPI(c, MPI_Recv(buf + at, m, MPI_FLOAT, peer, 0, c->group_comm[WF_GROUP_TP], MPI_STATUS_IGNORE));
    }
}

/* Parameter k's whole value (kind SRC_*) into dst (wf_whole_numel floats, the
 * file's layout) on the stage's writer, dp 0 and tp 0.  Every rank of the
 * stage calls it, in the same order: a gather over dp of the ZeRO pieces
 * that make the tp shard, then the tp shards sent to the writer one by one. */
static void obtain(wf_ctx *c, int k, int kind, float *dst, tensor_bufs *b, const held_copy *h) {
    const wf_program *p = c->p;
    const wf_param *q = &p->params[k];
    source s = h ? held_source(c, h, k, kind) : source_of(c, k, kind);
    if (s.full) {  /* every dp replica holds it: dp 0's */
        if (c->dp_rank == 0) as_floats(c, b->local, s.full, s.bits16, q->numel);
    } else {
        long lo = c->own_lo[k], n = c->own_hi[k] - lo;
        if (p->zero || c->dp_rank == 0) as_floats(c, b->piece, s.piece, s.bits16, n);
        if (c->dp_rank == 0) memset(b->local, 0, sizeof(float) * (size_t)q->numel);  /* frozen: no moments */
        if (p->zero) gather_pieces(c, k, b->piece, b);
        else if (c->dp_rank == 0) memcpy(b->local + lo, b->piece, sizeof(float) * (size_t)n);
    }
    if (c->dp_rank != 0) return;
    /* the tp shards one at a time (not gathered together: that would hold a
     * second whole tensor), each into its places in dst */
    if (c->tp_rank != 0) {
        tp_transfer(c, b->local, q->numel, 0, 1);
        return;
    }
    if (p->tp == 1 && !q->transposed) {  /* the shard is the tensor */
        memcpy(dst, b->local, sizeof(float) * (size_t)wf_whole_numel(q));  /* (rows past a padded end dropped) */
        return;
    }
    long rows = q->gshape[0], cols = q->gshape[1];
    memset(dst, 0, sizeof(float) * (size_t)wf_whole_numel(q));
    for (int r = 0; r < p->tp; r++) {
        const float *shard = b->local;
        if (r > 0) {
            tp_transfer(c, b->parts, q->numel, r, 0);
            shard = b->parts;
        }
        for (long i = 0; i < q->numel; i++) {
            long g = wf_global_index(q, r, i);
            if (g < 0) continue;
            if (q->transposed) g = (g % cols) * rows + g / cols;  /* (in, out) -> the file's (out, in) */
            dst[g] = shard[i];
        }
    }
}

/* the tensors a file of this stage lists, with data NULL (streamed) */
typedef struct {
    wf_st_tensor *t;
    char (*names)[128];
    int n;
} tensor_list;

static void list_get(wf_ctx *c, tensor_list *l, int model) {
    const wf_program *p = c->p;
    size_t most = 9 * (size_t)p->n_params + (size_t)p->n_hf_consts;
    l->t = wf_host_alloc(c, sizeof *l->t * most, "checkpoint index");
    l->names = wf_host_alloc(c, 128 * most, "checkpoint names");
    if (model) {
        l->n = fill_tensors(c, NULL, NULL, l->t, l->names, "");
        l->n += fill_consts(c, NULL, NULL, l->t + l->n, NULL);
        return;
    }
    l->n = fill_tensors(c, NULL, NULL, l->t, l->names, "exp_avg.");
    l->n += fill_tensors(c, NULL, NULL, l->t + l->n, l->names + l->n, "exp_avg_sq.");
    if (p->weight_delay) l->n += fill_tensors(c, NULL, NULL, l->t + l->n, l->names + l->n, "delayed.");
}

static void list_free(tensor_list *l) {
    free(l->t);
    free(l->names);
}

/* A streamed file: opened by the writer rank only (w NULL elsewhere). */
static wf_st_writer *open_st(wf_ctx *c, const char *path, const tensor_list *l, int sums) {
    char err[PATH_MAX + 512];
    ckpt_meta meta;
    make_meta(c, &meta);
    wf_st_writer *w;
    if (wf_st_writer_open(&w, path, l->t, l->n, meta.kv, meta.n, sums, err, sizeof err) != 0)
        wf_fatal(c, "wf_st_writer_open", WF_WHERE, "%s", err);
    return w;
}

static void put_floats(wf_ctx *c, wf_st_writer *w, const float *x, long n) {
    char err[PATH_MAX + 512];
    if (w && wf_st_writer_floats(w, x, n, err, sizeof err) != 0) {
        wf_st_writer_abort(w);
        wf_fatal(c, "wf_st_writer_floats", WF_WHERE, "%s", err);
    }
}

/* Finishes a streamed file; root's (known) checksums recorded under name. */
static void finish_st(wf_ctx *c, wf_st_writer *w, const char *name, const tensor_list *l,
                      wf_manifest_known *known) {
    char err[PATH_MAX + 512];
    wf_st_sums sums = { 0 };
    if (known) sums.tensor_crc = wf_host_alloc(c, sizeof(uint32_t) * (size_t)(l->n ? l->n : 1), "checkpoint checksums");
    if (wf_st_writer_finish(w, known ? &sums : NULL, err, sizeof err) != 0)
        wf_fatal(c, "wf_st_writer_finish", WF_WHERE, "%s", err);
    if (known && wf_manifest_known_add(known, name, l->t, l->n, &sums) != 0)
        wf_fatal(c, "checkpoint", WF_WHERE, "out of memory recording the checksums of %s", name);
    free(sums.tensor_crc);
}

/* The stage's parameters in file order: the tied copies their owner saves are not in its files. */
static int saved_here(const wf_param *q) { return !(q->tied && q->tied != 1); }

/* Stage 0's Hugging Face constants after the model's tensors: a copy's
 * values (every rank takes part in obtaining them), or one value repeated. */
static void const_values(wf_ctx *c, wf_st_writer *w, float *whole, tensor_bufs *b, const held_copy *h) {
    const wf_program *p = c->p;
    float run[1024];
    for (int i = 0; i < p->n_hf_consts; i++) {
        const wf_hf_const *hc = &p->hf_consts[i];
        long numel = 1;
        for (int d = 0; d < hc->ndim; d++) numel *= hc->shape[d];
        int copy = -1;
        for (int k = 0; hc->copy && k < p->n_params; k++)
            if (strcmp(p->params[k].name, hc->copy) == 0) copy = k;
        if (copy >= 0) {
            obtain(c, copy, SRC_WEIGHTS, whole, b, h);
            put_floats(c, w, whole, numel);
            continue;
        }
        for (int j = 0; j < 1024; j++) run[j] = hc->value;
        for (long at = 0; at < numel; at += 1024) put_floats(c, w, run, numel - at < 1024 ? numel - at : 1024);
    }
}

/* The save of this stage: DIR/MODEL and DIR/OPTIM written by the writer
 * (dp 0, tp 0) tensor by tensor as every rank of the stage obtains them;
 * root's checksums into known (pp 1).  The pieces come from the live arrays
 * (h NULL, the synchronous save) or from this rank's held copy (--async-save's
 * thread, c's group communicators then its duplicates). */
static void write_streamed(wf_ctx *c, const char *dir, wf_manifest_known *known, const held_copy *h) {
    const wf_program *p = c->p;
    int writer = c->dp_rank == 0 && c->tp_rank == 0;
    char model[64], optim[64], path[PATH_MAX];
    stage_names(c, model, optim, sizeof model, c->stage);
    long wmax, lmax;
    largest(p, &wmax, &lmax);
    tensor_bufs b;
    bufs_get(c, &b);
    float *whole = writer ? save_alloc(c, sizeof(float) * (size_t)wmax, "checkpoint tensor") : NULL;
    for (int file = 0; file < 2; file++) {
        tensor_list l;
        list_get(c, &l, file == 0);
        const char *name = file == 0 ? model : optim;
        CKPT_PATH(c, path, "%s/%s", dir, name);
        wf_st_writer *w = writer ? open_st(c, path, &l, known != NULL) : NULL;
        int kinds[3] = { SRC_M, SRC_V, SRC_DELAYED }, n_kinds = file == 0 ? 1 : 2 + p->weight_delay;
        if (file == 0) kinds[0] = SRC_WEIGHTS;
        for (int j = 0; j < n_kinds; j++)
            for (int k = 0; k < p->n_params; k++) {
                if (!saved_here(&p->params[k])) continue;
                obtain(c, k, kinds[j], whole, &b, h);
                put_floats(c, w, whole, wf_whole_numel(&p->params[k]));
            }
        if (file == 0) const_values(c, w, whole, &b, h);
        if (w) finish_st(c, w, name, &l, known);
        list_free(&l);
    }
    save_free(whole);
    bufs_free(&b);
}

/* --async-save at the step boundary: the writer's host copy of every whole
 * tensor of the stage (*ww .. *wd, laid out by off; the caller's thread
 * writes and frees them), obtained tensor by tensor as above. */
static void copy_for_async(wf_ctx *c, const long *off, long total, float **ww, float **wm, float **wv, float **wd) {
    const wf_program *p = c->p;
    int writer = c->dp_rank == 0 && c->tp_rank == 0;
    float **sets[4] = { ww, wm, wv, wd };
    for (int j = 0; j < 4; j++) {
        *sets[j] = NULL;
        if (writer && (j < 3 || p->weight_delay))
            *sets[j] = save_alloc(c, sizeof(float) * (size_t)(total ? total : 1), "checkpoint (async)");
    }
    tensor_bufs b;
    bufs_get(c, &b);
    int kinds[4] = { SRC_WEIGHTS, SRC_M, SRC_V, SRC_DELAYED };
    for (int j = 0; j < 3 + p->weight_delay; j++)
        for (int k = 0; k < p->n_params; k++)  /* tied copies too: a constant may be a copy of one */
            obtain(c, k, kinds[j], writer ? *sets[j] + off[k] : NULL, &b, NULL);
    bufs_free(&b);
}

/* --async-save with threads: this rank's own pieces into h (what obtain
 * reads of them, in the same conditions); returns their bytes. */
static double copy_own(wf_ctx *c, held_copy *h) {
    const wf_program *p = c->p;
    long n_at = (long)(3 + p->weight_delay) * p->n_params, total = 0;
    h->at = wf_host_alloc(c, sizeof(long) * (size_t)n_at, "checkpoint (async) offsets");
    h->full = wf_host_alloc(c, (size_t)n_at, "checkpoint (async) kinds");
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) h->base = save_alloc(c, sizeof(float) * (size_t)(total ? total : 1), "checkpoint (async)");
        total = 0;
        for (long i = 0; i < n_at; i++) {
            int kind = (int)(i / p->n_params), k = (int)(i % p->n_params);
            source s = source_of(c, k, kind);
            long n = -1, lo = c->own_lo[k];
            /* weights of tied copies too: a constant may be a copy of one */
            if (kind != SRC_WEIGHTS && !saved_here(&p->params[k])) n = -1;
            else if (s.full) n = c->dp_rank == 0 ? p->params[k].numel : -1;
            else if (p->zero || c->dp_rank == 0) n = c->own_hi[k] - lo;
            h->full[i] = s.full != NULL;
            h->at[i] = n >= 0 ? total : -1;
            if (pass == 1 && n > 0) as_floats(c, h->base + total, s.full ? s.full : s.piece, s.bits16, n);
            if (n > 0) total += n;
        }
    }
    return 4.0 * (double)total;
}

static void held_free(held_copy *h) {
    save_free(h->base);
    free(h->at);
    free(h->full);
    memset(h, 0, sizeof *h);
}

static void log_note(void *arg, const char *text) { wf_log((const wf_ctx *)arg, "checkpoint: %s\n", text); }

/* What the manifest records besides the files. */
static void make_info(const wf_ctx *c, wf_ckpt_info *info) {
    const wf_program *p = c->p;
    ckpt_meta meta;
    make_meta(c, &meta);
    memset(info, 0, sizeof *info);
    info->step = c->step;
    info->global_batch = p->global_batch;
    info->samples_seen = c->step * (long)p->global_batch;
    info->seed = (unsigned long long)p->seed;
    snprintf(info->plan, sizeof info->plan, "%s", p->plan ? p->plan : "");
    snprintf(info->plan_hash, sizeof info->plan_hash, "%s", p->plan_hash ? p->plan_hash : "");
    snprintf(info->model, sizeof info->model, "%s", meta.shape);
    if (p->precision == WF_FP16) {  /* the same values the safetensors metadata carries */
        info->has_scaler = 1;
        info->scale = strtod(meta.scale, NULL);
        info->hysteresis = c->scaler.hysteresis;
        info->good_steps = c->scaler.good_steps;
        info->skipped = c->scaler.skipped;
    }
}

void wf_ckpt_check_target(const wf_ctx *c, const char *dir, int set) {
    char err[PATH_MAX + 512], probe[PATH_MAX];
    if (!wf_is_root(c)) return;
    /* the names a save will make must fit: DIR.tmp-PID, DIR/step_N.tmp-PID/FILE */
    CKPT_PATH(c, probe, "%s%s.tmp-%d/optimizer-%05d-of-%05d.safetensors.tmp.%d", dir,
              set ? "/step_000000000000" : "", INT_MAX, c->p->pp, c->p->pp, INT_MAX);
    if (wf_ckpt_folder_kind(dir, set ? WF_CKPT_SET_MARKER : WF_CKPT_MARKER, err, sizeof err) < 0)
        wf_fatal(c, "checkpoint", WF_WHERE, "%s%s", err,
                 set ? " (with --keep, --ckpt names a folder of step_N checkpoints)" : "");
    size_t end = strlen(dir), start;
    while (end > 1 && dir[end - 1] == '/') end--;
    for (start = end; start > 0 && dir[start - 1] != '/'; start--) {}
    if (end - start + strlen(".tmp-2147483647") > NAME_MAX)  /* the file system's name limit */
        wf_fatal(c, "checkpoint", WF_WHERE, "cannot save to %s: its name, %zu bytes, leaves no room for "
                 "the temporary %.*s.tmp-PID (a name holds at most %d bytes)", dir, end - start,
                 (int)(end - start > 40 ? 40 : end - start), dir + start, NAME_MAX);
    struct stat st;  /* the save makes DIR.tmp-PID beside DIR, not the folders above */
    if (wf_parent_of(dir, probe, sizeof probe, err, sizeof err) != 0 || stat(probe, &st) != 0 ||
        !S_ISDIR(st.st_mode))
        wf_fatal(c, "checkpoint", WF_WHERE, "cannot save to %s: the folder %s does not exist", dir, probe);
}

static void rotate(wf_ctx *c, const char *set, int keep);

static double seconds_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Root, once every file is in tmp: config.json, the manifest, the swap. */
static void finish_folder(wf_ctx *c, const char *tmp, const char *dir, const char *old,
                          const wf_manifest_known *known) {
    char err[2 * PATH_MAX + 512];
    write_config(c, tmp);
    wf_ckpt_test_kill("written");
    wf_ckpt_info info;
    make_info(c, &info);
    if (wf_manifest_write(tmp, &info, c->p->hf_config, known, err, sizeof err) != 0 ||
        wf_fsync_dir(tmp, err, sizeof err) != 0)
        wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
    wf_ckpt_test_kill("manifest");
    if (wf_ckpt_swap(tmp, dir, old, err, sizeof err) != 0)
        wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
}

/* --async-save: the host copies made at the step boundary, written by a
 * thread while training goes on; one save in flight at a time.
 *
 * With MPI_THREAD_MULTIPLE (the usual case) every rank copies only its own
 * pieces (copy_own) and every rank's thread runs the synchronous save's
 * streaming (write_streamed) from them, on duplicates of the dp and tp
 * communicators (so that its messages never meet training's).  Otherwise
 * each stage's writer (dp 0, tp 0) gathers its stage's whole tensors at the
 * step boundary (copy_for_async) and only its thread writes them.
 *
 * With pp > 1 each stage's writer writes its stage's shards into the
 * temporary folder, and world rank 0's thread, once its own are written,
 * waits for every other stage's checksums (stage_sums_path), writes the
 * indexes and swaps the folder in, as the synchronous save does. */
typedef struct {
    pthread_t thread;
    int running, streamed;
    wf_ctx snap;  /* the context as of the step saved (step, loss scaler; the duplicated communicators) */
    char dir[PATH_MAX], tmp[PATH_MAX], old[PATH_MAX];
    float *ww, *wm, *wv, *wd;
    long *off;
    held_copy own;  /* streamed: this rank's pieces */
    double held;    /* streamed: their bytes */
} async_save;
static async_save pending;

/* The dp and tp communicators' duplicates for the writer threads: made once,
 * collectively, on the main thread at the first --async-save.  0: no thread
 * may call MPI (MPI_Init_thread gave less than MPI_THREAD_MULTIPLE). */
static MPI_Comm thread_comm[WF_GROUPS];
static int thread_comms_made;

static int streamed_async(wf_ctx *c) {
    if (thread_comms_made) return thread_comms_made > 0;
    int provided = MPI_THREAD_SINGLE;
    WF_MPI(c, MPI_Query_thread(&provided));
    if (provided < MPI_THREAD_MULTIPLE) {
        thread_comms_made = -1;
        if (wf_is_root(c))
            wf_log(c, "checkpoint: MPI gives no MPI_THREAD_MULTIPLE: --async-save copies each stage's whole "
                      "tensors to its writer rank, as before\n");
        return 0;
    }
    for (int g = 0; g < WF_GROUPS; g++) {
        thread_comm[g] = MPI_COMM_NULL;
        if (c->group_comm[g] != MPI_COMM_NULL) WF_MPI(c, MPI_Comm_dup(c->group_comm[g], &thread_comm[g]));
    }
    thread_comms_made = 1;
    return 1;
}

static void stage_names(const wf_ctx *c, char *model, char *optim, size_t n, int stage) {
    if (c->p->pp > 1) {  /* Hugging Face's shard names, one shard a stage */
        wf_ckpt_shard_name(model, n, "model", stage, c->p->pp);
        wf_ckpt_shard_name(optim, n, "optimizer", stage, c->p->pp);
    } else {
        snprintf(model, n, "model.safetensors");
        snprintf(optim, n, "optimizer.safetensors");
    }
}

/* pp > 1: where stage s's writer (not world rank 0) leaves the checksums it
 * took while writing its two shards, for world rank 0's manifest; hidden, so
 * that no manifest lists it, and removed once read. */
static void stage_sums_path(wf_ctx *c, const char *tmp, int s, char *out, size_t n) {
    char err[PATH_MAX + 512];
    if (wf_path_fmt(out, n, err, sizeof err, "%s/.weft-sums-stage%d.json", tmp, s) != 0)
        wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
}

/* A stage writer's end of its save with pp > 1: world rank 0 keeps its
 * checksums itself (known); another writer hands them over through tmp,
 * after both of its shards are complete under their final names. */
static void hand_over_sums(wf_ctx *c, const char *tmp, wf_manifest_known *mine) {
    char path[PATH_MAX], err[PATH_MAX + 512];
    stage_sums_path(c, tmp, c->stage, path, sizeof path);
    if (wf_manifest_known_save(mine, path, err, sizeof err) != 0) wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
    wf_manifest_known_free(mine);
}

/* World rank 0 with pp > 1, once every stage has handed over its checksums
 * (its shards complete): they join its own in known, and the indexes that
 * make the shards one Hugging Face checkpoint are written. */
static void collect_stages(wf_ctx *c, const char *tmp, wf_manifest_known *known) {
    char path[PATH_MAX], err[PATH_MAX + 512];
    for (int s = 0; s < c->p->pp; s++) {
        if (s == c->stage) continue;  /* root's own stage: in known already */
        stage_sums_path(c, tmp, s, path, sizeof path);
        if (wf_manifest_known_load(known, path, err, sizeof err) != 0) wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
        unlink(path);  /* ours, in our temporary folder */
    }
    double bytes[2];
    if (wf_ckpt_index_write(tmp, "model", c->p->pp, &bytes[0], err, sizeof err) != 0 ||
        wf_ckpt_index_write(tmp, "optimizer", c->p->pp, &bytes[1], err, sizeof err) != 0)
        wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
}

/* Root's writer thread, pp > 1: waits until every other stage's checksums
 * are in tmp (hand_over_sums renames them in after its shards are complete).
 * A stage whose writer died ends the job through MPI; one that is merely
 * stuck is named after the job's fault timeout (the watchdog's: the command
 * line's, else the plan's fault.timeout_s) or four times root's own writing
 * time, whichever is longer: the stages write shards of like size at once,
 * so a large model's legitimate save is never cut short. */
static void wait_for_stages(wf_ctx *c, const char *tmp, double own_s) {
    double limit = wf_watch_timeout() > 0 ? wf_watch_timeout() : 300.0, t0 = seconds_now();
    if (limit < 4.0 * own_s) limit = 4.0 * own_s;
    for (int s = 0; s < c->p->pp; s++) {
        if (s == c->stage) continue;
        char model[64], optim[64], sums[PATH_MAX];
        stage_names(c, model, optim, sizeof model, s);
        stage_sums_path(c, tmp, s, sums, sizeof sums);
        struct stat st;
        while (stat(sums, &st) != 0) {
            if (seconds_now() - t0 > limit)
                wf_fatal(c, "checkpoint", WF_WHERE, "the background save of step %ld: stage %d's files "
                         "(%s, %s) not written after %.0f s (fault.timeout_s, or 4 x this stage's writing time)",
                         c->step, s, model, optim, limit);
            struct timespec nap = { 0, 5000000 };  /* 5 ms */
            nanosleep(&nap, NULL);
        }
    }
}

/* World rank 0's end of a background save: the stages' checksums and the
 * indexes (pp > 1), the folder finished and renamed in. */
static void root_finishes(async_save *a, wf_manifest_known *known, double t0) {
    wf_ctx *c = &a->snap;
    if (c->p->pp > 1) {
        wait_for_stages(c, a->tmp, seconds_now() - t0);
        collect_stages(c, a->tmp, known);
    }
    finish_folder(c, a->tmp, a->dir, a->old, known);
    wf_manifest_known_free(known);
    wf_log(c, "checkpoint: step %ld saved to %s (written in the background in %.1f ms)\n", c->step,
           a->dir, 1000.0 * (seconds_now() - t0));
}

static void *write_in_background(void *arg) {
    async_save *a = arg;
    wf_ctx *c = &a->snap;
    double t0 = seconds_now();
    char model[64], optim[64];
    stage_names(c, model, optim, sizeof model, c->stage);
    wf_manifest_known *known = wf_manifest_known_new();  /* this writer's files: checksummed as written */
    if (!known) wf_fatal(c, "checkpoint", WF_WHERE, "out of memory");
    write_files(c, a->tmp, model, optim, a->ww, a->wm, a->wv, a->wd, a->off, known);
    save_free(a->ww), save_free(a->wm), save_free(a->wv), save_free(a->wd), free(a->off);
    a->ww = a->wm = a->wv = a->wd = NULL, a->off = NULL;
    if (wf_is_root(c)) root_finishes(a, known, t0);
    else hand_over_sums(c, a->tmp, known);  /* another stage's writer (pp > 1) */
    return NULL;
}

/* every rank's thread, streamed: the synchronous save's code from the held copy */
static void *stream_in_background(void *arg) {
    async_save *a = arg;
    wf_ctx *c = &a->snap;
    double t0 = seconds_now();
    wf_manifest_known *known = NULL;  /* a writer's files: checksummed as written */
    if (c->dp_rank == 0 && c->tp_rank == 0 && !(known = wf_manifest_known_new()))
        wf_fatal(c, "checkpoint", WF_WHERE, "out of memory");
    write_streamed(c, a->tmp, known, &a->own);
    held_free(&a->own);
    if (wf_is_root(c)) root_finishes(a, known, t0);
    else if (known) hand_over_sums(c, a->tmp, known);  /* another stage's writer (pp > 1) */
    return NULL;
}

static void start_async(wf_ctx *c, const char *dir, const char *tmp, const char *old, float *ww,
                        float *wm, float *wv, float *wd, long *off) {
    async_save *a = &pending;
    a->snap = *c;
    if (a->streamed)
        for (int g = 0; g < WF_GROUPS; g++) a->snap.group_comm[g] = thread_comm[g];
    snprintf(a->dir, sizeof a->dir, "%s", dir);  /* each was built with a checked length */
    snprintf(a->tmp, sizeof a->tmp, "%s", tmp);
    snprintf(a->old, sizeof a->old, "%s", old);
    a->ww = ww, a->wm = wm, a->wv = wv, a->wd = wd, a->off = off;
    int e = pthread_create(&a->thread, NULL, a->streamed ? stream_in_background : write_in_background, a);
    if (e != 0) wf_fatal(c, "pthread_create", WF_WHERE, "cannot start the checkpoint writer: %s", strerror(e));
    a->running = 1;
}

void wf_ckpt_wait(wf_ctx *c) {
    if (!pending.running) return;
    double t0 = seconds_now();
    int e = pthread_join(pending.thread, NULL);
    if (e != 0) wf_fatal(c, "pthread_join", WF_WHERE, "%s", strerror(e));
    pending.running = 0;
    if (pending.streamed)  /* every rank waits here at the same point: the thread's peak, reported */
        report_peak(c, "async", save_bound(c, 0) + pending.held);
    if (c->opt.keep > 0 && c->opt.ckpt && wf_is_root(c)) rotate(c, c->opt.ckpt, c->opt.keep);
    double ms = 1000.0 * (seconds_now() - t0);
    if (ms >= 0.1) wf_log(c, "checkpoint: waited %.1f ms for the background save of step %ld\n", ms, pending.snap.step);
}

/* Writes the checkpoint folder dir (every rank calls it).  Every dp replica
 * holds the same weights: replica 0 gathers its tp shards, each pipeline
 * stage's leader writes its whole tensors (pp > 1: its shard of a Hugging
 * Face sharded checkpoint), world rank 0 writes the indexes and the
 * manifest and swaps the folder in. */
static void save_folder(wf_ctx *c, const char *dir) {
    const wf_program *p = c->p;
    wf_ckpt_wait(c);  /* the previous background save, if any, is finished first */
    double t0 = seconds_now();
    wf_backend_sync(c);  /* the host reads every arena */
    __atomic_store_n(&save_peak, __atomic_load_n(&save_now, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
    long *off = wf_host_alloc(c, sizeof(long) * (size_t)p->n_params, "checkpoint offsets");
    long total = whole_offsets(p, off);
    float *ww = NULL, *wm = NULL, *wv = NULL, *wd = NULL;
    /* --async-save: the host copies, made now; else streamed below */
    pending.streamed = c->opt.async_save && streamed_async(c);
    if (pending.streamed) {
        pending.held = copy_own(c, &pending.own);
    } else if (c->opt.async_save) {
        copy_for_async(c, off, total, &ww, &wm, &wv, &wd);
        double held = c->dp_rank == 0 && c->tp_rank == 0 ? wf_ckpt_whole_stage_held((double)total, p->weight_delay) : 0;
        report_peak(c, "async copy", save_bound(c, held));
    }
    int job = (int)getpid();  /* rank 0's, so that every rank names the same folder */
    WF_MPI(c, MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD));
    char tmp[PATH_MAX], old[PATH_MAX], err[2 * PATH_MAX + 512];
    CKPT_PATH(c, tmp, "%s.tmp-%d", dir, job);
    CKPT_PATH(c, old, "%s.old-%d", dir, job);
    if (wf_is_root(c)) {
        /* refused before anything is written: a folder Weft did not write */
        if (wf_ckpt_folder_kind(dir, WF_CKPT_MARKER, err, sizeof err) < 0)
            wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
        if (wf_ckpt_clean_stale(dir, 0, log_note, c, err, sizeof err) < 0)
            wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
        if (mkdir(tmp, 0755) != 0)
            wf_fatal(c, "mkdir", WF_WHERE, "cannot create checkpoint folder %s: %s", tmp, strerror(errno));
        if (wf_ckpt_mark(tmp, WF_CKPT_MARKER, err, sizeof err) != 0)
            wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
    }
    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
    if (c->opt.async_save) {  /* every rank's thread, or each stage's writer's, writes in the background */
        if (pending.streamed) free(off), off = NULL;  /* (the writer's whole-stage layout only) */
        if (pending.streamed || (c->dp_rank == 0 && c->tp_rank == 0)) {
            start_async(c, dir, tmp, old, ww, wm, wv, wd, off);
        } else {
            free(off);  /* (a writer's copy only) */
        }
        WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
        wf_log(c, "checkpoint: step %ld copied to host memory in %.1f ms (training blocked); writing %s in "
               "the background%s\n", c->step, 1000.0 * (seconds_now() - t0), dir,
               p->pp > 1 ? " (one writer per pipeline stage)" : "");
        return;
    }
    wf_manifest_known *known = NULL;  /* a writer's files: checksummed as written */
    if (c->dp_rank == 0 && c->tp_rank == 0 && !(known = wf_manifest_known_new()))
        wf_fatal(c, "checkpoint", WF_WHERE, "out of memory");
    write_streamed(c, tmp, known, NULL);
    if (known && !wf_is_root(c)) hand_over_sums(c, tmp, known), known = NULL;  /* pp > 1 */
    report_peak(c, "save", save_bound(c, 0));
    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
    if (wf_is_root(c)) {
        if (p->pp > 1) collect_stages(c, tmp, known);
        finish_folder(c, tmp, dir, old, known);
        wf_manifest_known_free(known);
        /* only now: renamed into place and the parent folder synced */
        wf_log(c, "checkpoint: step %ld saved to %s (%.1f ms)\n", c->step, dir, 1000.0 * (seconds_now() - t0));
    }
    free(off);
    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
}

void wf_ckpt_save(wf_ctx *c, const char *dir) { save_folder(c, dir); }

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return (x > y) - (x < y);
}

/* --keep N: the newest N step_N checkpoints in the set stay, older ones go. */
static void rotate(wf_ctx *c, const char *set, int keep) {
    char path[PATH_MAX], err[PATH_MAX + 512];
    DIR *d = opendir(set);
    if (!d) return;
    long *steps = NULL;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        long step;
        if (strncmp(e->d_name, "step_", 5) != 0 || wf_parse_count(e->d_name + 5, &step) != 0) continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            steps = realloc(steps, sizeof *steps * (size_t)cap);
            if (!steps) wf_fatal(c, "realloc", WF_WHERE, "out of memory listing %s", set);
        }
        steps[n++] = step;
    }
    closedir(d);
    qsort(steps, (size_t)n, sizeof *steps, cmp_long);
    for (int i = 0; i + keep < n; i++) {
        CKPT_PATH(c, path, "%s/step_%08ld", set, steps[i]);
        if (wf_ckpt_remove(path, WF_CKPT_MARKER, err, sizeof err) == 0)
            wf_log(c, "checkpoint: removed %s (keeping the newest %d)\n", path, keep);
        else
            wf_log(c, "checkpoint: kept %s: %s\n", path, err);
    }
    free(steps);
}

void wf_ckpt_save_periodic(wf_ctx *c) {
    const char *set = c->opt.ckpt;
    int keep = c->opt.keep;
    if (keep <= 0) {  /* --ckpt DIR is the checkpoint, replaced each time */
        save_folder(c, set);
        return;
    }
    char dir[PATH_MAX], err[PATH_MAX + 512];
    CKPT_PATH(c, dir, "%s/step_%08ld", set, c->step);
    if (wf_is_root(c)) {
        int kind = wf_ckpt_folder_kind(set, WF_CKPT_SET_MARKER, err, sizeof err);
        if (kind < 0)
            wf_fatal(c, "checkpoint", WF_WHERE, "%s (with --keep, --ckpt names a folder of step_N "
                     "checkpoints)", err);
        if (kind == WF_FOLDER_ABSENT && mkdir(set, 0755) != 0)
            wf_fatal(c, "mkdir", WF_WHERE, "cannot create checkpoint folder %s: %s", set, strerror(errno));
        if (kind != WF_FOLDER_OURS && wf_ckpt_mark(set, WF_CKPT_SET_MARKER, err, sizeof err) != 0)
            wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
        /* killed saves of other steps left STEP.tmp-N / STEP.old-N here */
        if (wf_ckpt_clean_stale(dir, 1, log_note, c, err, sizeof err) < 0)
            wf_fatal(c, "checkpoint", WF_WHERE, "%s", err);
    }
    save_folder(c, dir);
    if (wf_is_root(c) && !c->opt.async_save) rotate(c, set, keep);  /* async: once it is written */
    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
}

/* One parameter's tensor(s) in a checkpoint, read a piece at a time: the
 * file elements a rank's range touches, never the whole tensor at once
 * (startup_peak.h).  The file holds q as rows x cols, its sections one
 * after another (transposed ones (out, in): rows are output features);
 * "whole index" is an element's place in that layout. */
typedef struct {
    const wf_ckpt_set *set;
    const wf_param *q;
    const char *prefix;
    long shape[4];   /* one section's, as the file holds it */
    long rows, cols, part;
    float *buf;
    long cap;        /* buf's floats */
    long r0, h, c0, w;  /* held: rows [r0, r0 + h) x columns [c0, c0 + w) (transposed) */
    long a, len;        /* held: whole indices [a, a + len) (not transposed) */
} piece_reader;

/* whole indices [a, a + n), inside one section, into dst */
static void read_span(wf_ctx *c, const piece_reader *pr, long a, long n, float *dst) {
    char err[512], name[160];
    long s = a / pr->part;
    saved_name(pr->q, (int)s, pr->prefix, name, sizeof name);
    const wf_st_file *f = wf_ckpt_set_file(pr->set, name);  /* (its shard, in a sharded set) */
    if (!f)
        wf_fatal(c, "wf_st_read", WF_WHERE, "no tensor %s in %s (checkpoint is not from this model)", name,
                 wf_ckpt_set_path(pr->set));
    long lo = a - s * pr->part;
    if (wf_st_read_range(f, name, pr->q->ndim, pr->shape, lo, lo + n, dst, err, sizeof err) != 0)
        wf_fatal(c, "wf_st_read", WF_WHERE, "%s (checkpoint %s is not from this model)", err,
                 wf_ckpt_set_path(pr->set));
}

/* The file's value of element i of this rank's part of q: resharding on
 * load is this index.  A miss reads the piece that starts at it; a range
 * walks the file forward, so each piece is read once. */
static float file_value(wf_ctx *c, piece_reader *pr, long i) {
    const wf_param *q = pr->q;
    long g = wf_global_index(q, c->tp_rank, i);
    if (g < 0) return 0.0f;  /* vocabulary padding */
    if (!q->transposed) {
        if (g < pr->a || g >= pr->a + pr->len) {
            long left = pr->part - g % pr->part;  /* to the end of its section */
            pr->a = g;
            pr->len = left < pr->cap ? left : pr->cap;
            read_span(c, pr, pr->a, pr->len, pr->buf);
        }
        return pr->buf[g - pr->a];
    }
    long r = g % pr->rows, col = g / pr->rows;  /* the file's (out, in) */
    if (r < pr->r0 || r >= pr->r0 + pr->h || col < pr->c0 || col >= pr->c0 + pr->w) {
        if (pr->rows <= pr->cap) {  /* every row, as many columns as fit */
            pr->r0 = 0;
            pr->h = pr->rows;
            pr->w = pr->cap / pr->rows;
        } else {  /* one column, rows as many as fit */
            pr->r0 = r;
            pr->h = pr->rows - r < pr->cap ? pr->rows - r : pr->cap;
            pr->w = 1;
        }
        pr->c0 = col;
        if (pr->w > pr->cols - col) pr->w = pr->cols - col;
        for (long k = 0; k < pr->h; k++)
            read_span(c, pr, (pr->r0 + k) * pr->cols + pr->c0, pr->w, pr->buf + k * pr->w);
    }
    return pr->buf[(r - pr->r0) * pr->w + col - pr->c0];
}

/* dst[0 .. n) = the file's values of elements [lo, lo + n) of this rank's part of q */
static void read_range(wf_ctx *c, const wf_ckpt_set *set, const wf_param *q, const char *prefix,
                       float *piece, long cap, long lo, long n, float *dst) {
    piece_reader pr = { .set = set, .q = q, .prefix = prefix, .buf = piece, .cap = cap };
    file_shape(q, pr.shape);
    pr.rows = pr.shape[0] * sections_of(q);
    pr.cols = q->ndim >= 2 ? pr.shape[1] : 1;
    pr.part = wf_whole_numel(q) / sections_of(q);
    for (long i = 0; i < n; i++) dst[i] = file_value(c, &pr, lo + i);
}

/* Into base, laid out like the parameters: whole tensors, one at a time,
 * and this rank's part of each kept (resharding on load).  Or, a piece at
 * a time (startup_peak.h), this rank's own range of each (its ZeRO shard)
 * into moment, laid out like the moments; or (both NULL: ZeRO-3's
 * parameters) each own range placed in the shards and master
 * (zero_startup.c) and the frozen ones whole in the gather arena.
 * delayed: ZeRO-3's 2BW older version, into the current shard only. */
static void read_all(wf_ctx *c, const wf_ckpt_set *set, float *base, float *moment, const char *prefix,
                     int delayed) {
    const wf_program *p = c->p;
    char err[512], name[160];
    if (!base) {
        long cap = wf_startup_piece_floats(c);
        /* WEFT_CKPT_PIECE (floats, >= 1) lowers it, so that the tests run
         * every piece shape on small tensors */
        const char *env = getenv("WEFT_CKPT_PIECE");
        if (env && *env) {
            char *end;
            long v = strtol(env, &end, 10);
            if (*end || v < 1)
                wf_fatal(c, "checkpoint", WF_WHERE, "WEFT_CKPT_PIECE wants floats >= 1, got '%s'", env);
            if (v < cap) cap = v;
        }
        float *piece = wf_startup_alloc(c, sizeof(float) * (size_t)cap, "checkpoint piece");
        float *own = wf_startup_alloc(c, sizeof(float) * (size_t)wf_own_most(c), "checkpoint own range");
        for (int k = 0; k < p->n_params; k++) {
            const wf_param *q = &p->params[k];
            if (!moment && q->bucket < 0) {  /* ZeRO-3's frozen: whole on every rank, one version */
                if (!delayed) read_range(c, set, q, prefix, piece, cap, 0, q->numel, c->params + wf_frozen_at(p, k));
                continue;
            }
            long lo = c->own_lo[k], n = c->own_hi[k] - lo;
            read_range(c, set, q, prefix, piece, cap, lo, n, own);
            if (moment) memcpy(moment + c->moment_base[k], own, sizeof(float) * (size_t)n);
            else if (delayed) wf_zero3_place(c, k, own, 0, c->param_shard, NULL);
            else wf_zero3_place(c, k, own, 1, c->param_shard, p->weight_delay ? c->next_shard : NULL);
        }
        wf_startup_free(piece);
        wf_startup_free(own);
        return;
    }
    long most, local_most;  /* (the largest tp shard: not needed here) */
    largest(p, &most, &local_most);
    float *whole = wf_startup_alloc(c, sizeof(float) * (size_t)most, "checkpoint tensor");
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        long shape[4], part = wf_whole_numel(q) / sections_of(q);
        file_shape(q, shape);
        for (int s = 0; s < sections_of(q); s++) {
            saved_name(q, s, prefix, name, sizeof name);
            const wf_st_file *f = wf_ckpt_set_file(set, name);  /* (its shard, in a sharded set) */
            if (!f)
                wf_fatal(c, "wf_st_read", WF_WHERE, "no tensor %s in %s (checkpoint is not from this model)", name,
                         wf_ckpt_set_path(set));
            if (wf_st_read(f, name, q->ndim, shape, whole + s * part, err, sizeof err) != 0)
                wf_fatal(c, "wf_st_read", WF_WHERE, "%s (checkpoint %s is not from this model)", err,
                         wf_ckpt_set_path(set));
        }
        if (q->transposed) transpose(c, whole, shape[0] * sections_of(q), shape[1]);
        for (long i = 0; i < q->numel; i++) {
            long g = wf_global_index(q, c->tp_rank, i);
            base[q->offset + i] = g >= 0 ? whole[g] : 0.0f;
        }
    }
    wf_startup_free(whole);
}

/* Root finds and verifies the checkpoint (the folder named, or the complete
 * previous one a save killed between its renames left next to it) and
 * tells every rank its path and facts. */
static void resolve_and_verify(wf_ctx *c, const char *dir, char *path, size_t n, wf_ckpt_info *info) {
    char err[PATH_MAX + 1024];
    int len = 0;
    if (wf_is_root(c)) {
        struct stat st;
        if (wf_path_fmt(path, n, err, sizeof err, "%s", dir) != 0)
            wf_fatal(c, "wf_ckpt_load", WF_WHERE, "%s", err);
        if (lstat(dir, &st) != 0 && errno == ENOENT && wf_ckpt_find_old(dir, path, n) == 0)
            wf_log(c, "checkpoint: %s is missing; resuming from %s, the complete previous checkpoint "
                   "an interrupted save left (the next save puts it back)\n", dir, path);
        if (wf_ckpt_verify(path, info, err, sizeof err) != 0)
            wf_fatal(c, "wf_ckpt_load", WF_WHERE, "checkpoint %s refused: %s", path, err);
        len = (int)strlen(path) + 1;
    }
    WF_MPI(c, MPI_Bcast(&len, 1, MPI_INT, 0, MPI_COMM_WORLD));
    WF_MPI(c, MPI_Bcast(path, len, MPI_CHAR, 0, MPI_COMM_WORLD));
    WF_MPI(c, MPI_Bcast(info, (int)sizeof *info, MPI_BYTE, 0, MPI_COMM_WORLD));
}

/* Every rank reads the full tensors, one at a time (resharding on load is
 * slicing them), from model.safetensors or the shards of a sharded set (a
 * checkpoint of any pipeline depth); under ZeRO-3 it keeps only its own
 * ranges. */
void wf_ckpt_load(wf_ctx *c, const char *dir) {
    char folder[PATH_MAX], err[PATH_MAX + 1024];
    wf_ckpt_info info;
    const wf_program *p = c->p;
    wf_ckpt_set *f;
    resolve_and_verify(c, dir, folder, sizeof folder, &info);
    if (wf_ckpt_set_open_in(&f, folder, "model", err, sizeof err) != 0)
        wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
    read_all(c, f, p->zero >= 3 ? NULL : c->params, NULL, "", 0);
    c->step = info.step;  /* the manifest's, checked equal to every file's metadata */
    if (p->precision == WF_FP16 && info.has_scaler) {
        c->scaler.scale = info.scale;
        c->scaler.hysteresis = (int)info.hysteresis;
        c->scaler.good_steps = info.good_steps;
        c->scaler.skipped = info.skipped;
    }
    wf_ckpt_set_close(f);

    if (wf_ckpt_set_open_in(&f, folder, "optimizer", err, sizeof err) != 0)
        wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
    read_all(c, f, NULL, c->adam_m, "exp_avg.", 0);
    read_all(c, f, NULL, c->adam_v, "exp_avg_sq.", 0);
    if (p->weight_delay) {
        /* the model is the newest version; the one the next batch computes on
         * is saved as delayed.* (absent in other schedules' checkpoints) */
        char first[160];
        /* (ZeRO-3: the model's values are already in both shards) */
        if (p->zero < 3) memcpy(c->next_params, c->params, sizeof(float) * (size_t)p->param_numel);
        saved_name(&p->params[0], 0, "delayed.", first, sizeof first);
        if (wf_ckpt_set_file(f, first)) read_all(c, f, p->zero >= 3 ? NULL : c->params, NULL, "delayed.", 1);
    }
    wf_ckpt_set_close(f);
    /* the same tensors can still be another model (an activation, an epsilon):
     * config.json must describe this program's */
    if (wf_is_root(c) && wf_ckpt_config_check(folder, p->hf_config, err, sizeof err) != 0)
        wf_fatal(c, "wf_ckpt_load", WF_WHERE, "checkpoint %s refused: %s", folder, err);
    wf_params_changed(c);
    if (p->plan_hash && strcmp(info.plan_hash, p->plan_hash) != 0)
        wf_log(c, "checkpoint: written by plan %s (%.12s), resumed by plan %s (%.12s)\n", info.plan,
               info.plan_hash, p->plan, p->plan_hash);
    if (info.global_batch != p->global_batch)
        wf_log(c, "checkpoint: note: it saw %ld samples at global batch %ld; this program, at global "
               "batch %d, continues from sample %ld\n", info.samples_seen, info.global_batch,
               p->global_batch, c->step * (long)p->global_batch);
    wf_log(c, "checkpoint: resumed from %s at step %ld (manifest verified)\n", folder, c->step);
}
