/* resume_auto.c: `--resume auto`, the option a requeued job runs with: the
 * newest complete checkpoint in the checkpoint folder (--ckpt DIR, else
 * --save DIR), or a fresh start when there is none yet.
 *
 * A checkpoint is a folder holding model.safetensors and optimizer.
 * safetensors as regular files, or (pp > 1) their sharded sets' indexes
 * (ckpt_shards.h); the save renames a finished folder into
 * place (ckpt.c), so one under its final name is complete.  The folder
 * itself is one, or (should the saves keep several) its subfolders are;
 * the highest weft_step wins.  Rank 0 looks and tells the others, so that
 * every rank loads the same one. */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_shards.h"
#include "internal.h"
#include "safetensors.h"

#define PATH_MAX_LEN 4096

static int regular(const char *dir, const char *name) {
    char path[PATH_MAX_LEN];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/%s", dir, name) >= (int)sizeof path) return 0;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* The checkpoint's step, or -1 where dir holds none.  One that cannot be
 * read ends the job: starting afresh would overwrite it at the next save. */
static long step_of(wf_ctx *c, const char *dir) {
    int one = regular(dir, "model.safetensors") && regular(dir, "optimizer.safetensors");
    int sharded = regular(dir, "model.safetensors.index.json") && regular(dir, "optimizer.safetensors.index.json");
    if (!one && !sharded) return -1;
    char path[PATH_MAX_LEN], err[PATH_MAX_LEN + 512];
    snprintf(path, sizeof path, "%s/model.safetensors%s", dir, one ? "" : ".index.json");
    wf_ckpt_set *set;
    if (wf_ckpt_set_open(&set, path, err, sizeof err) != 0)
        wf_fatal(c, "wf_resume_auto", WF_WHERE, "%s (a checkpoint --resume auto cannot read: move it away, "
                 "or name another with --resume DIR)", err);
    const char *text = wf_st_meta(wf_ckpt_set_first(set), "weft_step");
    char *end = NULL;
    long step = text ? strtol(text, &end, 10) : -1;
    if (!text || end == text || *end || step < 0)
        wf_fatal(c, "wf_resume_auto", WF_WHERE, "%s: weft_step is %s%s%s, not a step number (a checkpoint "
                 "--resume auto cannot read)", path, text ? "\"" : "", text ? text : "missing", text ? "\"" : "");
    wf_ckpt_set_close(set);
    return step;
}

/* Rank 0's choice: the path (in out), or "" for none. */
static void newest(wf_ctx *c, const char *dir, char *out, size_t n, long *best) {
    out[0] = '\0';
    *best = step_of(c, dir);
    if (*best >= 0) snprintf(out, n, "%s", dir);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.') continue;  /* ".", "..", and hidden leftovers */
        /* a save killed midway (ckpt.c's DIR.tmp-PID / DIR.old-PID): never the newest */
        if (strstr(e->d_name, ".tmp-") || strstr(e->d_name, ".old-")) continue;
        char sub[PATH_MAX_LEN];
        struct stat st;
        if (snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name) >= (int)sizeof sub) continue;
        if (lstat(sub, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        long step = step_of(c, sub);
        if (step > *best) {
            *best = step;
            snprintf(out, n, "%s", sub);
        }
    }
    closedir(d);
}

const char *wf_resume_auto(wf_ctx *c) {
    const char *dir = c->opt.ckpt ? c->opt.ckpt : c->opt.save;
    if (!dir)
        wf_fatal(c, "options", WF_WHERE, "--resume auto looks for checkpoints in the folder of --ckpt DIR "
                 "(or --save DIR), and neither was given");
    static char chosen[PATH_MAX_LEN];
    long step = -1;
    if (wf_is_root(c)) newest(c, dir, chosen, sizeof chosen, &step);
    WF_MPI(c, MPI_Bcast(chosen, (int)sizeof chosen, MPI_CHAR, 0, MPI_COMM_WORLD));
    WF_MPI(c, MPI_Bcast(&step, 1, MPI_LONG, 0, MPI_COMM_WORLD));
    if (!chosen[0]) {
        wf_log(c, "resume auto: no checkpoint in %s yet: starting from step 0\n", dir);
        return NULL;
    }
    wf_log(c, "resume auto: newest checkpoint is %s (step %ld)\n", chosen, step);
    return chosen;
}
