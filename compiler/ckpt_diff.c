/* ckpt_diff.c: `weft ckpt diff A B [--tol X]`. */
#include "ckpt_diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "safetensors.h"

static int compare_tensor(const wf_st_file *a, const wf_st_file *b, const char *name,
                          double tol, double atol, double *worst, FILE *out) {
    char err[512];
    long shape[4];
    int ndim = wf_st_shape(a, name, shape, 4);
    if (ndim < 0) return -1;
    long n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    float *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
    int rc = -1;
    if (wf_st_read(a, name, ndim, shape, x, err, sizeof err) != 0 ||
        wf_st_read(b, name, ndim, shape, y, err, sizeof err) != 0) {
        fprintf(out, "%s: %s\n", name, err);
        goto done;
    }
    double max_diff = 0, max_abs = 0;
    for (long i = 0; i < n; i++) {
        double d = fabs((double)x[i] - (double)y[i]);
        if (d > max_diff || d != d) max_diff = d;
        if (fabs(x[i]) > max_abs) max_abs = fabs(x[i]);
    }
    double rel = max_abs > 0 ? max_diff / max_abs : max_diff;
    if (rel > *worst) *worst = rel;
    int same = tol == 0 && atol == 0 ? memcmp(x, y, sizeof(float) * (size_t)n) == 0
                                    : max_diff <= atol + tol * max_abs;
    if (!same) fprintf(out, "%-32s max|a-b| %.3e  relative %.3e\n", name, max_diff, rel);
    rc = same ? 0 : 1;
done:
    free(x);
    free(y);
    return rc;
}

int ckpt_diff(const char *path_a, const char *path_b, double tol, double atol, FILE *out) {
    char err[512];
    wf_st_file *a = NULL, *b = NULL;
    if (wf_st_open(&a, path_a, err, sizeof err) != 0 || wf_st_open(&b, path_b, err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        if (a) wf_st_close(a);
        return -1;
    }
    int differ = 0, missing = 0;
    double worst = 0;
    for (int i = 0; i < wf_st_count(a); i++) {
        const char *name = wf_st_name(a, i);
        int rc = compare_tensor(a, b, name, tol, atol, &worst, out);
        if (rc < 0) missing++;
        if (rc > 0) differ++;
    }
    if (wf_st_count(b) != wf_st_count(a)) {
        fprintf(out, "tensor counts differ: %d vs %d\n", wf_st_count(a), wf_st_count(b));
        missing++;
    }
    fprintf(out, "%d tensors: %d differ beyond %s, %d missing or mismatched; worst relative %.3e\n",
            wf_st_count(a), differ, tol == 0 && atol == 0 ? "bit-identity" : "the tolerance", missing, worst);
    wf_st_close(a);
    wf_st_close(b);
    return differ || missing ? -1 : 0;
}
