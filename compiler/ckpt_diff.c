/* ckpt_diff.c: `weft ckpt diff A B [--norm-tol R [--from A0]] [--bound B] [--tol R] [--atol A]
 *                               [--noise PATTERN:LO:HI]...`.
 *
 * Layouts of one plan agree to fp32 reduction-order noise, which AdamW's
 * normalization can blow up to a whole update in an element whose gradient is
 * itself noise (a gradient that is zero in exact arithmetic).  So the tests
 * judge a tensor as a whole, ||a - b|| against ||a - a0|| (what training moved
 * it from the common initial weights a0; or against ||a||), and bound single elements only
 * by what the optimizer can move them at all (--bound, derived by the test
 * from the plan's schedule; see tests/e2e/equivalence.sh).
 *
 * A and B are safetensors files or Hugging Face sharded sets (ckpt_shards.h:
 * the index, or the absent BASE.safetensors beside it), so that checkpoints
 * of any pipeline depth compare tensor by tensor; a checkpoint folder stands
 * for its model. */
#include "ckpt_diff.h"

#include <fnmatch.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt_shards.h"
#include "safetensors.h"

typedef struct {
    double max_diff, rel_norm;               /* the worst over all tensors */
    char max_name[128], norm_name[128];
} worst_seen;

static int exact(const ckpt_tolerance *t) {
    return t->tol == 0 && t->atol == 0 && t->bound == 0 && t->norm_tol == 0;
}

/* Is element i of tensor `name` one whose gradient is noise (--noise)? */
static int is_noise(const ckpt_tolerance *t, const char *name, long i) {
    for (int k = 0; k < t->n_noise; k++)
        if (i >= t->noise[k].lo && i < t->noise[k].hi && fnmatch(t->noise[k].pattern, name, 0) == 0) return 1;
    return 0;
}

static int compare_tensor(const wf_ckpt_set *sa, const wf_ckpt_set *sb, const wf_ckpt_set *sfrom,
                          const char *name, const ckpt_tolerance *t, worst_seen *w, FILE *out) {
    char err[512];
    const wf_st_file *a = wf_ckpt_set_file(sa, name), *b = wf_ckpt_set_file(sb, name);
    const wf_st_file *from = sfrom ? wf_ckpt_set_file(sfrom, name) : NULL;
    if (!b || (sfrom && !from)) {
        fprintf(out, "%s: missing in %s\n", name, wf_ckpt_set_path(!b ? sb : sfrom));
        return -1;
    }
    long shape[WF_ST_FILE_MAX_NDIM];  /* a file's tensor may have up to 8 dimensions */
    int ndim = wf_st_shape(a, name, shape, WF_ST_FILE_MAX_NDIM);
    if (ndim < 0) return -1;
    long n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    float *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    float *x0 = from ? malloc(sizeof(float) * (size_t)(n ? n : 1)) : NULL;
    int rc = -1;
    if (wf_st_read(a, name, ndim, shape, x, err, sizeof err) != 0 ||
        wf_st_read(b, name, ndim, shape, y, err, sizeof err) != 0 ||
        (from && wf_st_read(from, name, ndim, shape, x0, err, sizeof err) != 0)) {
        fprintf(out, "%s: %s\n", name, err);
        goto done;
    }
    double max_diff = 0, max_abs = 0, sq_diff = 0, sq_a = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (d > max_diff || d != d) max_diff = d;  /* a NaN sticks */
        if (fabs(x[i]) > max_abs) max_abs = fabs(x[i]);
        if (t->n_noise && is_noise(t, name, i)) continue;  /* held to --bound only */
        sq_diff += d * d;
        double ref = x0 ? (double)x[i] - x0[i] : x[i];  /* a's update, or a itself */
        sq_a += ref * ref;
    }
    /* ||a - b|| / ||a|| (or / ||a - from||); 0 / 0 is agreement, x / 0 is not */
    double rel_norm = sq_a > 0 ? sqrt(sq_diff / sq_a) : sq_diff > 0 ? INFINITY : 0;
    if (max_diff > w->max_diff || max_diff != max_diff) {
        w->max_diff = max_diff;
        snprintf(w->max_name, sizeof w->max_name, "%s", name);
    }
    if (rel_norm > w->rel_norm || rel_norm != rel_norm) {
        w->rel_norm = rel_norm;
        snprintf(w->norm_name, sizeof w->norm_name, "%s", name);
    }
    int same;
    if (exact(t)) {
        same = memcmp(x, y, sizeof(float) * (size_t)n) == 0;
    } else {
        same = max_diff == max_diff;  /* NaN fails every criterion */
        if (t->tol > 0 || t->atol > 0) same &= max_diff <= t->atol + t->tol * max_abs;
        if (t->bound > 0) same &= max_diff <= t->bound;
        if (t->norm_tol > 0) same &= rel_norm <= t->norm_tol;
    }
    if (!same)
        fprintf(out, "%-32s max|a-b| %.3e (of max|a| %.3e)  ||a-b||/||a%s|| %.3e\n", name, max_diff,
                max_abs, from ? "-a0" : "", rel_norm);
    rc = same ? 0 : 1;
done:
    free(x);
    free(y);
    free(x0);
    return rc;
}

/* a file or set; a folder stands for its model */
static int open_one(wf_ckpt_set **s, const char *path, char *err, size_t n) {
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) return wf_ckpt_set_open_in(s, path, "model", err, n);
    return wf_ckpt_set_open(s, path, err, n);
}

int ckpt_diff(const char *path_a, const char *path_b, const ckpt_tolerance *t, FILE *out) {
    char err[PATH_MAX + 512];
    wf_ckpt_set *a = NULL, *b = NULL, *from = NULL;
    if (open_one(&a, path_a, err, sizeof err) != 0 || open_one(&b, path_b, err, sizeof err) != 0 ||
        (t->from && open_one(&from, t->from, err, sizeof err) != 0)) {
        fprintf(stderr, "weft: error: %s\n", err);
        wf_ckpt_set_close(a);
        wf_ckpt_set_close(b);
        return -1;
    }
    int differ = 0, missing = 0;
    worst_seen w = { 0 };
    for (int i = 0; i < wf_ckpt_set_count(a); i++) {
        const char *name = wf_ckpt_set_name(a, i);
        int rc = compare_tensor(a, b, from, name, t, &w, out);
        if (rc < 0) missing++;
        if (rc > 0) differ++;
    }
    if (wf_ckpt_set_count(b) != wf_ckpt_set_count(a)) {
        fprintf(out, "tensor counts differ: %d vs %d\n", wf_ckpt_set_count(a), wf_ckpt_set_count(b));
        missing++;
    }
    fprintf(out, "%d tensors: %d differ beyond %s, %d missing or mismatched", wf_ckpt_set_count(a), differ,
            exact(t) ? "bit-identity" : "the tolerance", missing);
    if (w.max_diff > 0 || w.max_diff != w.max_diff)
        fprintf(out, "; worst max|a-b| %.3e (%s), worst ||a-b||/||a%s|| %.3e (%s)", w.max_diff,
                w.max_name, from ? "-a0" : "", w.rel_norm, w.norm_name);
    fprintf(out, "\n");
    wf_ckpt_set_close(a);
    wf_ckpt_set_close(b);
    wf_ckpt_set_close(from);
    return differ || missing ? -1 : 0;
}
