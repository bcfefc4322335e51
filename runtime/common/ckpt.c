/* ckpt.c: checkpoints as a folder that Hugging Face and PyTorch tools read:
 *   model.safetensors      full tensors, named and shaped as in HF GPT-2
 *   optimizer.safetensors  AdamW moments ("exp_avg.NAME", "exp_avg_sq.NAME")
 *   config.json            the compiler's GPT2Config or LlamaConfig, carried by
 *                          the program (LLaMA's projection weights, (in, out)
 *                          in weft, are saved transposed, (out, in), as HF's
 *                          nn.Linear keeps them)
 * The step, the data position and the model's shape travel as safetensors
 * metadata.  The folder is written under a temporary name and swapped in, so
 * a failed save leaves the previous checkpoint as it was. */
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "internal.h"
#include "safetensors.h"

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st; (void)type; (void)ftw;
    return remove(path);
}

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

static void fill_tensors(const wf_ctx *c, const float *whole, const long *off, wf_st_tensor *t,
                         char (*names)[128], const char *prefix) {
    const wf_program *p = c->p;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        snprintf(names[k], 128, "%s%s", prefix, q->name);
        t[k].name = names[k];
        t[k].ndim = q->ndim;
        memcpy(t[k].shape, q->gshape, sizeof t[k].shape);
        if (q->transposed) {
            t[k].shape[0] = q->gshape[1];
            t[k].shape[1] = q->gshape[0];
        }
        t[k].data = whole + off[k];
    }
}

static int is_llama(const wf_program *p) { return p->family && strcmp(p->family, "llama") == 0; }

/* config.json: the compiler wrote it (hf_config.c) and the program carries
 * its text; the checkpoint gets the same file. */
static void write_config(const wf_ctx *c, const char *dir) {
    const wf_program *p = c->p;
    if (!p->hf_config) wf_fatal(c, "config.json", WF_WHERE, "the program carries no config.json (recompile it)");
    char path[1200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) wf_fatal(c, "fopen", WF_WHERE, "cannot write %s: %s", path, strerror(errno));
    size_t n = strlen(p->hf_config);
    if (fwrite(p->hf_config, 1, n, f) != n) {
        fclose(f);
        wf_fatal(c, "fwrite", WF_WHERE, "writing %s failed", path);
    }
    if (fclose(f) != 0) wf_fatal(c, "fclose", WF_WHERE, "writing %s failed", path);
}

/* Drops the tied copies (their owner saves them) from t[0 .. n_params * (1 +
 * both)]; returns how many remain. */
static int pack_owned(const wf_ctx *c, wf_st_tensor *t, char (*names)[128], int both) {
    const wf_program *p = c->p;
    int n = 0;
    (void)names;
    for (int half = 0; half <= both; half++)
        for (int k = 0; k < p->n_params; k++)
            if (!p->params[k].tied || p->params[k].tied == 1) t[n++] = t[half * p->n_params + k];
    return n;
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

/* Writes this stage's whole tensors (not the tied copies its owner saves) as
 * DIR/NAME.safetensors for the model and the optimizer state. */
static void write_files(wf_ctx *c, const char *dir, const char *model_name, const char *optim_name,
                        const float *ww, const float *wm, const float *wv, const float *wd,
                        const long *off) {
    const wf_program *p = c->p;
    char path[1200], err[512];
    ckpt_meta meta;
    make_meta(c, &meta);
    wf_st_tensor *t = wf_host_alloc(c, sizeof *t * 3 * (size_t)p->n_params, "checkpoint index");
    char (*names)[128] = wf_host_alloc(c, 128 * 3 * (size_t)p->n_params, "checkpoint names");
    fill_tensors(c, ww, off, t, names, "");
    int n = pack_owned(c, t, names, 0);
    snprintf(path, sizeof path, "%s/%s", dir, model_name);
    if (wf_st_write(path, t, n, meta.kv, meta.n, err, sizeof err) != 0)
        wf_fatal(c, "wf_st_write", WF_WHERE, "%s", err);
    fill_tensors(c, wm, off, t, names, "exp_avg.");
    fill_tensors(c, wv, off, t + p->n_params, names + p->n_params, "exp_avg_sq.");
    /* PipeDream-2BW: the older weight version too, so that a resume continues exactly */
    if (wd) fill_tensors(c, wd, off, t + 2 * p->n_params, names + 2 * p->n_params, "delayed.");
    n = pack_owned(c, t, names, wd ? 2 : 1);
    snprintf(path, sizeof path, "%s/%s", dir, optim_name);
    if (wf_st_write(path, t, n, meta.kv, meta.n, err, sizeof err) != 0)
        wf_fatal(c, "wf_st_write", WF_WHERE, "%s", err);
    free(t);
    free(names);
}

/* Joins the stages' files DIR/BASE.stageS.safetensors into DIR/BASE.safetensors. */
static void merge_stages(wf_ctx *c, const char *dir, const char *base) {
    char path[1200], err[512];
    int n = 0, cap = 64;
    wf_st_tensor *t = wf_host_alloc(c, sizeof *t * (size_t)cap, "checkpoint merge");
    for (int s = 0; s < c->p->pp; s++) {
        wf_st_file *f;
        snprintf(path, sizeof path, "%s/%s.stage%d.safetensors", dir, base, s);
        if (wf_st_open(&f, path, err, sizeof err) != 0) wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
        for (int i = 0; i < wf_st_count(f); i++) {
            if (n == cap) {
                cap *= 2;
                t = realloc(t, sizeof *t * (size_t)cap);
                if (!t) wf_fatal(c, "realloc", WF_WHERE, "out of memory merging checkpoints");
            }
            const char *name = wf_st_name(f, i);
            t[n].name = strdup(name);
            t[n].ndim = wf_st_shape(f, name, t[n].shape, 4);
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
    snprintf(path, sizeof path, "%s/%s.safetensors", dir, base);
    if (wf_st_write(path, t, n, meta.kv, meta.n, err, sizeof err) != 0)
        wf_fatal(c, "wf_st_write", WF_WHERE, "%s", err);
    for (int i = 0; i < n; i++) {
        free((char *)t[i].name);
        free((float *)t[i].data);
    }
    free(t);
}

/* Every dp replica holds the same weights: replica 0 gathers its tp shards,
 * each pipeline stage's leader writes its whole tensors, world rank 0 joins
 * them and swaps the folder in. */
void wf_ckpt_save(wf_ctx *c, const char *dir) {
    const wf_program *p = c->p;
    wf_backend_sync(c);  /* the host reads every arena */
    long *off = wf_host_alloc(c, sizeof(long) * (size_t)p->n_params, "checkpoint offsets");
    long total = whole_offsets(p, off);
    const float *weights = p->weight_delay ? c->next_params : c->params;  /* the newest */
    /* 16-bit modes save the fp32 masters, so that a resume is exact;
     * ZeRO-3 gathers the parameter shards */
    float *full_w = c->master ? wf_moment_full(c, c->master) : p->zero >= 3 ? wf_params_whole(c) : NULL;
    if (full_w) weights = full_w;
    float *ww = NULL, *wm = NULL, *wv = NULL, *wd = NULL;
    float *full_m = wf_moment_full(c, c->adam_m), *full_v = wf_moment_full(c, c->adam_v);
    if (c->dp_rank == 0) {
        ww = gather_whole(c, weights, off, total);
        wm = gather_whole(c, full_m, off, total);
        wv = gather_whole(c, full_v, off, total);
        if (p->weight_delay) wd = gather_whole(c, c->params, off, total);
    }
    free(full_m);
    free(full_v);
    free(full_w);
    int job = (int)getpid();  /* rank 0's, so that every rank names the same folder */
    WF_MPI(c, MPI_Bcast(&job, 1, MPI_INT, 0, MPI_COMM_WORLD));
    char tmp[1100], old[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp-%d", dir, job);
    snprintf(old, sizeof old, "%s.old-%d", dir, job);
    if (wf_is_root(c)) {
        nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (mkdir(tmp, 0755) != 0)
            wf_fatal(c, "mkdir", WF_WHERE, "cannot create checkpoint folder %s: %s", tmp, strerror(errno));
    }
    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
    if (c->dp_rank == 0 && c->tp_rank == 0) {
        char model[64], optim[64];
        if (p->pp > 1) {
            snprintf(model, sizeof model, "model.stage%d.safetensors", c->stage);
            snprintf(optim, sizeof optim, "optimizer.stage%d.safetensors", c->stage);
        } else {
            snprintf(model, sizeof model, "model.safetensors");
            snprintf(optim, sizeof optim, "optimizer.safetensors");
        }
        write_files(c, tmp, model, optim, ww, wm, wv, wd, off);
    }
    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
    if (wf_is_root(c)) {
        if (p->pp > 1) {
            merge_stages(c, tmp, "model");
            merge_stages(c, tmp, "optimizer");
        }
        write_config(c, tmp);
        struct stat st;
        int had_old = stat(dir, &st) == 0;
        if (had_old && rename(dir, old) != 0)
            wf_fatal(c, "rename", WF_WHERE, "cannot move the previous checkpoint %s aside: %s", dir,
                     strerror(errno));
        if (rename(tmp, dir) != 0) {
            int e = errno;
            if (had_old) rename(old, dir);
            wf_fatal(c, "rename", WF_WHERE, "cannot rename %s to %s: %s", tmp, dir, strerror(e));
        }
        if (had_old) nftw(old, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        wf_log(c, "checkpoint: step %ld saved to %s\n", c->step, dir);
    }
    free(ww);
    free(wm);
    free(wv);
    free(wd);
    free(off);
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
        snprintf(name, sizeof name, "%s%s", prefix, q->name);
        long shape[4];
        memcpy(shape, q->gshape, sizeof shape);
        if (q->transposed) {
            shape[0] = q->gshape[1];
            shape[1] = q->gshape[0];
        }
        if (wf_st_read(f, name, q->ndim, shape, whole, err, sizeof err) != 0)
            wf_fatal(c, "wf_st_read", WF_WHERE, "%s (checkpoint %s is not from this model)", err, path);
        if (q->transposed) transpose(c, whole, shape[0], shape[1]);
        float *dst = base + q->offset;
        for (long i = 0; i < q->numel; i++) {
            long g = wf_global_index(q, c->tp_rank, i);
            dst[i] = g >= 0 ? whole[g] : 0.0f;
        }
    }
    free(whole);
}

/* Every rank reads the full tensors (resharding on load is slicing them). */
void wf_ckpt_load(wf_ctx *c, const char *dir) {
    char path[1200], err[512];
    wf_st_file *f;
    snprintf(path, sizeof path, "%s/model.safetensors", dir);
    if (wf_st_open(&f, path, err, sizeof err) != 0) wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
    read_all(c, f, path, c->params, "");
    const char *step = wf_st_meta(f, "weft_step");
    if (!step) wf_fatal(c, "wf_ckpt_load", WF_WHERE, "%s has no weft_step metadata", path);
    c->step = atol(step);
    if (c->p->precision == WF_FP16 && wf_st_meta(f, "weft_loss_scale")) {
        c->scaler.scale = atof(wf_st_meta(f, "weft_loss_scale"));
        c->scaler.hysteresis = atoi(wf_st_meta(f, "weft_scale_hysteresis"));
        c->scaler.good_steps = atol(wf_st_meta(f, "weft_scale_good_steps"));
        c->scaler.skipped = atol(wf_st_meta(f, "weft_skipped_steps"));
    }
    wf_st_close(f);

    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    if (wf_st_open(&f, path, err, sizeof err) != 0) wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
    float *full = wf_host_alloc(c, sizeof(float) * (size_t)c->p->param_numel, "checkpoint moments");
    read_all(c, f, path, full, "exp_avg.");
    wf_moment_keep(c, full, c->adam_m);
    read_all(c, f, path, full, "exp_avg_sq.");
    wf_moment_keep(c, full, c->adam_v);
    free(full);
    if (c->p->weight_delay) {
        /* the model is the newest version; the one the next batch computes on
         * is saved as delayed.* (absent in other schedules' checkpoints) */
        long shape[4];
        char first[160];
        memcpy(c->next_params, c->params, sizeof(float) * (size_t)c->p->param_numel);
        snprintf(first, sizeof first, "delayed.%s", c->p->params[0].name);
        if (wf_st_shape(f, first, shape, 4) >= 0) read_all(c, f, path, c->params, "delayed.");
    }
    wf_st_close(f);
    wf_params_changed(c);
    wf_log(c, "checkpoint: resumed from %s at step %ld\n", dir, c->step);
}
