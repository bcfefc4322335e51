/* ckpt.c: checkpoints as a folder that Hugging Face and PyTorch tools read:
 *   model.safetensors      full tensors, named and shaped as in HF GPT-2
 *   optimizer.safetensors  AdamW moments ("exp_avg.NAME", "exp_avg_sq.NAME")
 *   config.json            a GPT2Config
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

/* Collects every parameter's tp shards into whole tensors on tp rank 0 of
 * this dp replica (the caller frees the result; NULL on other ranks). */
static float *gather_whole(wf_ctx *c, const float *base, const long *off, long total) {
    const wf_program *p = c->p;
    float *whole = c->tp_rank == 0 ? wf_alloc(c, sizeof(float) * (size_t)total, "checkpoint") : NULL;
    float *parts = c->tp_rank == 0 && p->tp > 1
                       ? wf_alloc(c, sizeof(float) * (size_t)p->param_numel * p->tp, "checkpoint shards")
                       : NULL;
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        if (p->tp == 1) {
            memcpy(whole + off[k], base + q->offset, sizeof(float) * (size_t)q->numel);
            continue;
        }
        WF_MPI(c, MPI_Gather(base + q->offset, (int)q->numel, MPI_FLOAT, parts, (int)q->numel,
                             MPI_FLOAT, 0, c->tp_comm));
        if (c->tp_rank != 0) continue;
        for (int r = 0; r < p->tp; r++)
            for (long i = 0; i < q->numel; i++) {
                long g = wf_global_index(q, r, i);
                if (g >= 0) whole[off[k] + g] = parts[(long)r * q->numel + i];
            }
    }
    free(parts);
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
        t[k].data = whole + off[k];
    }
}

static void write_config(const wf_ctx *c, const char *dir) {
    const wf_program *p = c->p;
    char path[1200];
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *f = fopen(path, "w");
    if (!f) wf_fatal(c, "fopen", WF_WHERE, "cannot write %s: %s", path, strerror(errno));
    fprintf(f, "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
               "  \"n_layer\": %d,\n  \"n_embd\": %d,\n  \"n_head\": %d,\n  \"n_positions\": %d,\n"
               "  \"n_ctx\": %d,\n  \"vocab_size\": %d,\n  \"activation_function\": \"gelu_new\",\n"
               "  \"layer_norm_epsilon\": 1e-05,\n  \"tie_word_embeddings\": true\n}\n",
            p->layers, p->hidden, p->heads, p->seq, p->seq, p->vocab);
    if (fclose(f) != 0) wf_fatal(c, "fclose", WF_WHERE, "writing %s failed", path);
}

void wf_ckpt_save(wf_ctx *c, const char *dir) {
    const wf_program *p = c->p;
    /* every dp replica holds the same weights: replica 0 gathers its tp shards
     * and world rank 0 writes whole tensors */
    long *off = wf_alloc(c, sizeof(long) * (size_t)p->n_params, "checkpoint offsets");
    long total = whole_offsets(p, off);
    float *whole_w = NULL, *whole_m = NULL, *whole_v = NULL;
    if (c->dp_rank == 0) {
        whole_w = gather_whole(c, c->params, off, total);
        whole_m = gather_whole(c, c->adam_m, off, total);
        whole_v = gather_whole(c, c->adam_v, off, total);
    }
    if (wf_is_root(c)) {
        char tmp[1100], old[1100], path[1200], err[512];
        snprintf(tmp, sizeof tmp, "%s.tmp-%d", dir, (int)getpid());
        snprintf(old, sizeof old, "%s.old-%d", dir, (int)getpid());
        nftw(tmp, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (mkdir(tmp, 0755) != 0)
            wf_fatal(c, "mkdir", WF_WHERE, "cannot create checkpoint folder %s: %s", tmp, strerror(errno));
        wf_st_tensor *t = wf_alloc(c, sizeof *t * 2 * (size_t)p->n_params, "checkpoint index");
        char (*names)[128] = wf_alloc(c, 128 * 2 * (size_t)p->n_params, "checkpoint names");
        char step[32], position[32], shape[128];
        snprintf(step, sizeof step, "%ld", c->step);
        snprintf(position, sizeof position, "%ld", c->step * (long)p->global_batch);
        snprintf(shape, sizeof shape, "gpt2 L%d h%d heads%d seq%d vocab%d", p->layers, p->hidden,
                 p->heads, p->seq, p->vocab);
        char seed[32];
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)p->seed);
        const char *meta[] = { "format", "pt", "weft_step", step, "weft_samples_seen", position,
                               "weft_model", shape, "weft_seed", seed, "weft_plan", p->plan };
        fill_tensors(c, whole_w, off, t, names, "");
        snprintf(path, sizeof path, "%s/model.safetensors", tmp);
        if (wf_st_write(path, t, p->n_params, meta, 6, err, sizeof err) != 0)
            wf_fatal(c, "wf_st_write", WF_WHERE, "%s", err);
        fill_tensors(c, whole_m, off, t, names, "exp_avg.");
        fill_tensors(c, whole_v, off, t + p->n_params, names + p->n_params, "exp_avg_sq.");
        snprintf(path, sizeof path, "%s/optimizer.safetensors", tmp);
        if (wf_st_write(path, t, 2 * p->n_params, meta, 6, err, sizeof err) != 0)
            wf_fatal(c, "wf_st_write", WF_WHERE, "%s", err);
        write_config(c, tmp);
        free(t);
        free(names);
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
    free(whole_w);
    free(whole_m);
    free(whole_v);
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
    float *whole = wf_alloc(c, sizeof(float) * (size_t)most, "checkpoint tensor");
    for (int k = 0; k < p->n_params; k++) {
        const wf_param *q = &p->params[k];
        snprintf(name, sizeof name, "%s%s", prefix, q->name);
        if (wf_st_read(f, name, q->ndim, q->gshape, whole, err, sizeof err) != 0)
            wf_fatal(c, "wf_st_read", WF_WHERE, "%s (checkpoint %s is not from this model)", err, path);
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
    wf_st_close(f);

    snprintf(path, sizeof path, "%s/optimizer.safetensors", dir);
    if (wf_st_open(&f, path, err, sizeof err) != 0) wf_fatal(c, "wf_st_open", WF_WHERE, "%s", err);
    read_all(c, f, path, c->adam_m, "exp_avg.");
    read_all(c, f, path, c->adam_v, "exp_avg_sq.");
    wf_st_close(f);
    wf_log(c, "checkpoint: resumed from %s at step %ld\n", dir, c->step);
}
