/* test_ckpt_diff.c: `weft ckpt diff`'s criteria on hand-made checkpoints:
 * --norm-tol against the updates (--from), --bound per element, and --noise,
 * which leaves the named elements out of the norms but not out of the bound. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt_diff.h"
#include "safetensors.h"
#include "check.h"

/* Writes one checkpoint of two 6-element tensors, a c_attn bias and a c_fc bias. */
static void save(const char *path, const float *attn, const float *fc) {
    char err[256];
    wf_st_tensor t[2] = { { "h.0.attn.c_attn.bias", 1, { 6 }, attn }, { "h.0.mlp.c_fc.bias", 1, { 6 }, fc } };
    if (wf_st_write(path, t, 2, NULL, 0, err, sizeof err) != 0) {
        fprintf(stderr, "test_ckpt_diff: %s\n", err);
        exit(1);
    }
}

static int diff(const char *a, const char *b, const ckpt_tolerance *t) {
    FILE *quiet = fopen("/dev/null", "w");
    int rc = ckpt_diff(a, b, t, quiet ? quiet : stdout);
    if (quiet) fclose(quiet);
    return rc;
}

int main(void) {
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/weft-ckpt-diff.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return 1;
    char p0[600], pa[600], pb[600], pc[600];
    snprintf(p0, sizeof p0, "%s/a0", dir);
    snprintf(pa, sizeof pa, "%s/a", dir);
    snprintf(pb, sizeof pb, "%s/b", dir);
    snprintf(pc, sizeof pc, "%s/c", dir);
    const float zero[6] = { 0 }, ones[6] = { 1, 1, 1, 1, 1, 1 };
    /* b: element 2 of the attn bias (inside the "key" range 2..3) off by 0.5;
     * c: the same element of the c_fc bias, which no --noise names */
    const float off[6] = { 1, 1, 1.5f, 1, 1, 1 };
    save(p0, zero, zero);
    save(pa, ones, ones);
    save(pb, off, ones);
    save(pc, ones, off);

    /* ||a-b|| / ||a-a0|| = 0.5 / sqrt(6) = 0.204 */
    ckpt_tolerance t = { .norm_tol = 0.1, .from = p0 };
    check(diff(pa, pb, &t) != 0, "an element 0.5 off fails a norm tolerance of 0.1 of the updates");
    t.noise[0] = (ckpt_noise){ "h.*.attn.c_attn.bias", 2, 4 };
    t.n_noise = 1;
    check(diff(pa, pb, &t) == 0, "--noise 'h.*.attn.c_attn.bias:2:4' leaves it out of the norm");
    t.noise[0].hi = 2;
    check(diff(pa, pb, &t) != 0, "a range that stops before it does not");
    t.noise[0] = (ckpt_noise){ "h.*.attn.c_attn.bias", 2, 4 };
    check(diff(pa, pc, &t) != 0, "the same element of a tensor the pattern does not match still counts");
    t.bound = 0.4;
    check(diff(pa, pb, &t) != 0, "--bound 0.4 still holds the noise element (0.5 off)");
    t.bound = 0.6;
    check(diff(pa, pb, &t) == 0, "--bound 0.6 lets it pass");
    check(diff(pa, pa, &(ckpt_tolerance){ 0 }) == 0 && diff(pa, pb, &(ckpt_tolerance){ 0 }) != 0,
          "no criterion: bit identity");

    unlink(p0), unlink(pa), unlink(pb), unlink(pc), rmdir(dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
