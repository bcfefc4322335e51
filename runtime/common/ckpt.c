/* ckpt.c: checkpoints as a folder that Hugging Face and PyTorch tools read:
 *   model.safetensors      full tensors, named and shaped as in HF GPT-2
 *   optimizer.safetensors  AdamW moments ("exp_avg.NAME", "exp_avg_sq.NAME")
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
#include "internal.h"
#include "safetensors.h"

/* A path from a format, or a fatal error: never a truncated path. */
#define CKPT_PATH(c, buf, ...)                                                            \
    do {                                                                                  \
        char why_[512];                                                                   \
        if (wf_path_fmt(buf, sizeof buf, why_, sizeof why_, __VA_ARGS__) != 0)            \
            wf_fatal(c, "checkpoint", WF_WHERE, "%s", why_);                              \
    } while (0)

static long whole_numel(const wf_param *q) {
    long n = 1;
    for (int d = 0; d < q->ndim; d++) n *= q->gshape[d];
    return n;
}

/* Offsets of each parameter's whole tensor in a buffer holding them all. */
static long whole_offsets(const wf_program *p, long *off) {
    long total = 0;
    for (int k = 0; k < p->n_params; k++) {
        off[k] = total;
        total += whole_numel(&p->params[k]);
    }
    return total;
}

/* rows x cols (row-major) -> cols x rows, in place through a copy. */
static void transpose(wf_ctx *c, float *m, long rows, long cols) {
    float *tmp = wf_host_alloc(c, sizeof(float) * (size_t)(rows * cols), "checkpoint transpose");
    memcpy(tmp, m, sizeof(float) * (size_t)(rows * cols));
    for (long r = 0; r < rows; r++)
        for (long k = 0; k < cols; k++) m[k * rows + r] = tmp[r * cols + k];
    free(tmp);
}

/* Collects every parameter's tp shards into whole tensors on tp rank 0 of
 * this dp replica (the caller frees the result; NULL on other ranks). */
static float *gather_whole(wf_ctx *c, const float *base, const long *off, long total) {
    const wf_program *p = c->p;
    float *whole = c->tp_rank == 0 ? wf_host_alloc(c, sizeof(float) * (size_t)total, "checkpoint") : NULL;
    float *parts = c->tp_rank == 0 && p->tp > 1
                       ? wf_host_alloc(c, sizeof(float) * (size_t)p->param_numel * p->tp, "checkpoint shards")
                       : NULL;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (p->tp == 1) {
            memcpy(whole + off[k], base + q->offset, sizeof(float) * (size_t)q->numel);
            continue;
        }
        WF_MPI(c, MPI_Gather(base + q->offset, (int)q->numel, MPI_FLOAT, parts, (int)q->numel,
                             MPI_FLOAT, 0, c->group_comm[WF_GROUP_TP]));
        if (c->tp_rank != 0) continue;
        for (int r = 0; r < p->tp; r++)
            for (long i = 0; i < q->numel; i++) {
                long g = wf_global_index(q, r, i);
                if (g >= 0) whole[off[k] + g] = parts[(long)r * q->numel + i];
            }
    }
    free(parts);
    for (int k = 0; whole && k < p->n_params; k++)  /* (in, out) -> the file's (out, in) */
        if (p->params[k].transposed)
            transpose(c, whole + off[k], p->params[k].gshape[0], p->params[k].gshape[1]);
    return whole;
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
        long part = whole_numel(q) / sections_of(q);
        for (int s = 0; s < sections_of(q); s++, n++) {
            saved_name(q, s, prefix, names[n], 128);
            t[n].name = names[n];
            t[n].ndim = q->ndim;
            memcpy(t[n].shape, shape, sizeof t[n].shape);
            t[n].data = whole + off[k] + s * part;
        }
    }
    return n;
}

/* Stage 0's Hugging Face constants (wf_hf_const), appended to t; the values
 * live in *buf (the caller frees it), a copy's in whole. */
static int fill_consts(wf_ctx *c, const float *whole, const long *off, wf_st_tensor *t, float **buf) {
    const wf_program *p = c->p;
    long total = 0;
    for (int i = 0; i < p->n_hf_consts; i++) {
        long numel = 1;
        for (int d = 0; d < p->hf_consts[i].ndim; d++) numel *= p->hf_consts[i].shape[d];
        total += numel;
    }
    *buf = wf_host_alloc(c, sizeof(float) * (size_t)(total ? total : 1), "checkpoint constants");
    float *at = *buf;
    for (int i = 0; i < p->n_hf_consts; i++) {
        const wf_hf_const *h = &p->hf_consts[i];
        long numel = 1;
        for (int d = 0; d < h->ndim; d++) numel *= h->shape[d];
        for (long j = 0; j < numel; j++) at[j] = h->value;
        t[i].name = h->name;
        t[i].ndim = h->ndim;
        memset(t[i].shape, 0, sizeof t[i].shape);
        memcpy(t[i].shape, h->shape, sizeof(long) * (size_t)h->ndim);
        t[i].data = at;
        for (int k = 0; h->copy && k < p->n_params; k++)  /* the program's own: never absent */
            if (strcmp(p->params[k].name, h->copy) == 0) t[i].data = whole + off[k];
        at += numel;
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

/* Joins the stages' files DIR/BASE.stageS.safetensors into DIR/BASE.safetensors. */
static void merge_stages(wf_ctx *c, const char *dir, const char *base, wf_manifest_known *known) {
    char path[PATH_MAX], err[PATH_MAX + 512];
    int n = 0, cap = 64;
    wf_st_tensor *t = wf_host_alloc(c, sizeof *t * (size_t)cap, "checkpoint merge");
    for (int s = 0; s < c->p->pp; s++) {
        wf_st_file *f;
        CKPT_PATH(c, path, "%s/%s.stage%d.safetensors", dir, base, s);
        if (wf_st_open(&f, path, err, sizeof err) != 0) wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
        for (int i = 0; i < wf_st_count(f); i++) {
            if (n == cap) {
                cap *= 2;
                t = realloc(t, sizeof *t * (size_t)cap);
                if (!t) wf_fatal(c, "realloc", WF_WHERE, "out of memory merging checkpoints");
            }
            const char *name = wf_st_name(f, i);
            t[n].name = strdup(name);
            t[n].ndim = wf_st_shape(f, name, t[n].shape, WF_ST_MAX_NDIM);
            if (t[n].ndim > WF_ST_MAX_NDIM)  /* the stage files are this program's: never */
                wf_fatal(c, "wf_st_shape", WF_WHERE, "%s: tensor %s has %d dimensions (at most %d)",
                         path, name, t[n].ndim, WF_ST_MAX_NDIM);
            long numel = 1;
            for (int d = 0; d < t[n].ndim; d++) numel *= t[n].shape[d];
            float *data = wf_host_alloc(c, sizeof(float) * (size_t)(numel ? numel : 1), "checkpoint tensor");
            if (wf_st_read(f, name, t[n].ndim, t[n].shape, data, err, sizeof err) != 0)
                wf_fatal(c, "wf_st_read", WF_WHERE, "%s", err);
            t[n++].data = data;
        }
        wf_st_close(f);
        unlink(path);
    }
    ckpt_meta meta;
    make_meta(c, &meta);
    char name[64];
    snprintf(name, sizeof name, "%s.safetensors", base);
    write_st(c, dir, name, t, n, &meta, known);
    for (int i = 0; i < n; i++) {
        free((char *)t[i].name);
        free((float *)t[i].data);
    }
    free(t);
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
    CKPT_PATH(c, probe, "%s%s.tmp-%d/optimizer.stage%d.safetensors.tmp.%d", dir,
              set ? "/step_000000000000" : "", INT_MAX, c->p->pp, INT_MAX);
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
 * thread while training goes on; one save in flight at a time.  Every
 * stage's writer (dp 0, tp 0) has its own thread; with pp > 1 each writes its
 * stage's files into the temporary folder, and world rank 0's thread, once
 * its own are written, waits for every other stage's files, joins them and
 * swaps the folder in, as the synchronous save does. */
typedef struct {
    pthread_t thread;
    int running;
    wf_ctx snap;  /* the context as of the step saved (step, loss scaler) */
    char dir[PATH_MAX], tmp[PATH_MAX], old[PATH_MAX];
    float *ww, *wm, *wv, *wd;
    long *off;
} async_save;
static async_save pending;

static void stage_names(const wf_ctx *c, char *model, char *optim, size_t n, int stage) {
    if (c->p->pp > 1) {
        snprintf(model, n, "model.stage%d.safetensors", stage);
        snprintf(optim, n, "optimizer.stage%d.safetensors", stage);
    } else {
        snprintf(model, n, "model.safetensors");
        snprintf(optim, n, "optimizer.safetensors");
    }
}

/* Root's writer thread, pp > 1: waits until every stage's two files are in
 * tmp.  wf_st_write fsyncs a file under a temporary name and renames it, so
 * a file under its final name is complete.  A stage whose writer died ends
 * the job through MPI; one that is merely stuck is named after the fault
 * timeout. */
static void wait_for_stages(wf_ctx *c, const char *tmp) {
    double limit = c->opt.fault_timeout > 0 ? c->opt.fault_timeout : 300.0, t0 = seconds_now();
    for (int s = 0; s < c->p->pp; s++) {
        char model[64], optim[64], a[PATH_MAX], b[PATH_MAX];
        stage_names(c, model, optim, sizeof model, s);
        CKPT_PATH(c, a, "%s/%s", tmp, model);
        CKPT_PATH(c, b, "%s/%s", tmp, optim);
        struct stat st;
        while (stat(a, &st) != 0 || stat(b, &st) != 0) {
            if (seconds_now() - t0 > limit)
                wf_fatal(c, "checkpoint", WF_WHERE, "the background save of step %ld: stage %d's files "
                         "(%s, %s) not written after %.0f s (fault.timeout_s)", c->step, s, model, optim, limit);
            struct timespec nap = { 0, 5000000 };  /* 5 ms */
            nanosleep(&nap, NULL);
        }
    }
}

static void *write_in_background(void *arg) {
    async_save *a = arg;
    wf_ctx *c = &a->snap;
    double t0 = seconds_now();
    char model[64], optim[64];
    stage_names(c, model, optim, sizeof model, c->stage);
    wf_manifest_known *known = NULL;  /* root's files: checksummed as written */
    if (wf_is_root(c) && !(known = wf_manifest_known_new()))
        wf_fatal(c, "checkpoint", WF_WHERE, "out of memory");
    /* (with pp > 1 the stage files are joined, and the joined files listed) */
    write_files(c, a->tmp, model, optim, a->ww, a->wm, a->wv, a->wd, a->off, c->p->pp == 1 ? known : NULL);
    free(a->ww), free(a->wm), free(a->wv), free(a->wd), free(a->off);
    a->ww = a->wm = a->wv = a->wd = NULL, a->off = NULL;
    if (!wf_is_root(c)) return NULL;  /* another stage's writer: its files are in */
    if (c->p->pp > 1) {
        wait_for_stages(c, a->tmp);
        merge_stages(c, a->tmp, "model", known);
        merge_stages(c, a->tmp, "optimizer", known);
    }
    finish_folder(c, a->tmp, a->dir, a->old, known);
    wf_manifest_known_free(known);
    wf_log(c, "checkpoint: step %ld saved to %s (written in the background in %.1f ms)\n", c->step,
           a->dir, 1000.0 * (seconds_now() - t0));
    return NULL;
}

static void start_async(wf_ctx *c, const char *dir, const char *tmp, const char *old, float *ww,
                        float *wm, float *wv, float *wd, long *off) {
    async_save *a = &pending;
    a->snap = *c;
    snprintf(a->dir, sizeof a->dir, "%s", dir);  /* each was built with a checked length */
    snprintf(a->tmp, sizeof a->tmp, "%s", tmp);
    snprintf(a->old, sizeof a->old, "%s", old);
    a->ww = ww, a->wm = wm, a->wv = wv, a->wd = wd, a->off = off;
    int e = pthread_create(&a->thread, NULL, write_in_background, a);
    if (e != 0) wf_fatal(c, "pthread_create", WF_WHERE, "cannot start the checkpoint writer: %s", strerror(e));
    a->running = 1;
}

void wf_ckpt_wait(wf_ctx *c) {
    if (!pending.running) return;
    double t0 = seconds_now();
    int e = pthread_join(pending.thread, NULL);
    if (e != 0) wf_fatal(c, "pthread_join", WF_WHERE, "%s", strerror(e));
    pending.running = 0;
    if (c->opt.keep > 0 && c->opt.ckpt && wf_is_root(c)) rotate(c, c->opt.ckpt, c->opt.keep);
    double ms = 1000.0 * (seconds_now() - t0);
    if (ms >= 0.1) wf_log(c, "checkpoint: waited %.1f ms for the background save of step %ld\n", ms, pending.snap.step);
}

/* Writes the checkpoint folder dir (every rank calls it).  Every dp replica
 * holds the same weights: replica 0 gathers its tp shards, each pipeline
 * stage's leader writes its whole tensors, world rank 0 joins them, writes
 * the manifest and swaps the folder in. */
static void save_folder(wf_ctx *c, const char *dir) {
    const wf_program *p = c->p;
    wf_ckpt_wait(c);  /* the previous background save, if any, is finished first */
    double t0 = seconds_now();
    wf_backend_sync(c);  /* the host reads every arena */
    long *off = wf_host_alloc(c, sizeof(long) * (size_t)p->n_params, "checkpoint offsets");
    long total = whole_offsets(p, off);
    const float *weights = p->weight_delay ? c->next_params : c->params;  /* the newest */
    /* 16-bit modes save the fp32 masters, so that a resume is exact;
     * ZeRO-3 gathers the parameter shards */
    float *newest = p->weight_delay ? c->next_shard : c->param_shard;  /* ZeRO-3 */
    float *full_w = c->master ? wf_moment_full(c, c->master) : p->zero >= 3 ? wf_params_whole(c, newest) : NULL;
    for (int k = 0; c->master && p->zero < 3 && k < p->n_params; k++)  /* frozen (weft.vlm): no master, fp32 working values */
        if (p->params[k].bucket < 0)
            memcpy(full_w + p->params[k].offset, weights + p->params[k].offset, sizeof(float) * (size_t)p->params[k].numel);
    for (int k = 0; c->master && p->zero >= 3 && k < p->n_params; k++)  /* (ZeRO-3: whole at the gather arena's end) */
        if (p->params[k].bucket < 0)
            memcpy(full_w + p->params[k].offset, c->params + wf_frozen_at(p, k), sizeof(float) * (size_t)p->params[k].numel);
    if (full_w) weights = full_w;
    float *ww = NULL, *wm = NULL, *wv = NULL, *wd = NULL;
    float *full_m = wf_moment_full(c, c->adam_m), *full_v = wf_moment_full(c, c->adam_v);
    if (c->dp_rank == 0) {
        ww = gather_whole(c, weights, off, total);
        wm = gather_whole(c, full_m, off, total);
        wv = gather_whole(c, full_v, off, total);
        if (p->weight_delay && p->zero < 3 && p->param16) {  /* 16-bit values (param16.c) */
            float *wide = wf_params16_widened(c, c->params);
            wd = gather_whole(c, wide, off, total);
            free(wide);
        } else if (p->weight_delay && p->zero < 3) wd = gather_whole(c, c->params, off, total);
    }
    free(full_m);
    free(full_v);
    free(full_w);
    /* ZeRO-3 under 2BW: the older version from its shards (every rank takes
     * part), once the whole copies above are freed (one fewer at the peak) */
    if (p->weight_delay && p->zero >= 3) {
        float *delayed = wf_params_whole(c, c->param_shard);
        if (c->dp_rank == 0) wd = gather_whole(c, delayed, off, total);
        free(delayed);
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
    if (c->opt.async_save) {  /* each stage's writer writes in the background */
        if (c->dp_rank == 0 && c->tp_rank == 0) {
            start_async(c, dir, tmp, old, ww, wm, wv, wd, off);
        } else {
            free(ww), free(wm), free(wv), free(wd), free(off);
        }
        WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
        wf_log(c, "checkpoint: step %ld copied to host memory in %.1f ms (training blocked); writing %s in "
               "the background%s\n", c->step, 1000.0 * (seconds_now() - t0), dir,
               p->pp > 1 ? " (one writer per pipeline stage)" : "");
        return;
    }
    wf_manifest_known *known = NULL;  /* root's files: checksummed as written */
    if (wf_is_root(c) && !(known = wf_manifest_known_new()))
        wf_fatal(c, "checkpoint", WF_WHERE, "out of memory");
    if (c->dp_rank == 0 && c->tp_rank == 0) {
        char model[64], optim[64];
        stage_names(c, model, optim, sizeof model, c->stage);
        write_files(c, tmp, model, optim, ww, wm, wv, wd, off, p->pp == 1 ? known : NULL);
    }
    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
    if (wf_is_root(c)) {
        if (p->pp > 1) {
            merge_stages(c, tmp, "model", known);
            merge_stages(c, tmp, "optimizer", known);
        }
        finish_folder(c, tmp, dir, old, known);
        wf_manifest_known_free(known);
        /* only now: renamed into place and the parent folder synced */
        wf_log(c, "checkpoint: step %ld saved to %s (%.1f ms)\n", c->step, dir, 1000.0 * (seconds_now() - t0));
    }
    free(ww);
    free(wm);
    free(wv);
    free(wd);
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

/* Reads whole tensors and keeps this rank's part: resharding on load. */
static void read_all(wf_ctx *c, const wf_st_file *f, const char *path, float *base,
                     const char *prefix) {
    const wf_program *p = c->p;
    char err[512], name[160];
    long most = 0;
    for (int k = 0; k < p->n_params; k++)
        if (whole_numel(&p->params[k]) > most) most = whole_numel(&p->params[k]);
    float *whole = wf_host_alloc(c, sizeof(float) * (size_t)most, "checkpoint tensor");
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        long shape[4], part = whole_numel(q) / sections_of(q);
        file_shape(q, shape);
        for (int s = 0; s < sections_of(q); s++) {
            saved_name(q, s, prefix, name, sizeof name);
            if (wf_st_read(f, name, q->ndim, shape, whole + s * part, err, sizeof err) != 0)
                wf_fatal(c, "wf_st_read", WF_WHERE, "%s (checkpoint %s is not from this model)", err, path);
        }
        if (q->transposed) transpose(c, whole, shape[0] * sections_of(q), shape[1]);
        float *dst = base + q->offset;
        for (long i = 0; i < q->numel; i++) {
            long g = wf_global_index(q, c->tp_rank, i);
            dst[i] = g >= 0 ? whole[g] : 0.0f;
        }
    }
    free(whole);
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

/* Every rank reads the full tensors (resharding on load is slicing them). */
void wf_ckpt_load(wf_ctx *c, const char *dir) {
    char path[PATH_MAX], folder[PATH_MAX], err[PATH_MAX + 1024];
    wf_ckpt_info info;
    const wf_program *p = c->p;
    wf_st_file *f;
    resolve_and_verify(c, dir, folder, sizeof folder, &info);
    CKPT_PATH(c, path, "%s/model.safetensors", folder);
    if (wf_st_open(&f, path, err, sizeof err) != 0) wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
    read_all(c, f, path, c->params, "");
    c->step = info.step;  /* the manifest's, checked equal to every file's metadata */
    if (p->precision == WF_FP16 && info.has_scaler) {
        c->scaler.scale = info.scale;
        c->scaler.hysteresis = (int)info.hysteresis;
        c->scaler.good_steps = info.good_steps;
        c->scaler.skipped = info.skipped;
    }
    wf_st_close(f);

    CKPT_PATH(c, path, "%s/optimizer.safetensors", folder);
    if (wf_st_open(&f, path, err, sizeof err) != 0) wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
    float *full = wf_host_alloc(c, sizeof(float) * (size_t)p->param_numel, "checkpoint moments");
    read_all(c, f, path, full, "exp_avg.");
    wf_moment_keep(c, full, c->adam_m);
    read_all(c, f, path, full, "exp_avg_sq.");
    wf_moment_keep(c, full, c->adam_v);
    free(full);
    if (p->weight_delay) {
        /* the model is the newest version; the one the next batch computes on
         * is saved as delayed.* (absent in other schedules' checkpoints) */
        long shape[4];
        char first[160];
        memcpy(c->next_params, c->params, sizeof(float) * (size_t)p->param_numel);
        saved_name(&p->params[0], 0, "delayed.", first, sizeof first);
        if (wf_st_shape(f, first, shape, 4) >= 0) read_all(c, f, path, c->params, "delayed.");
    }
    wf_st_close(f);
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
