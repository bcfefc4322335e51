/* ckpt_save.c: a checkpoint save's file writing and manifest, with the
 * checksums read back from the written files (as saves did before) and taken
 * while writing (wf_st_write_sums + wf_manifest_known, as they do now), side
 * by side in one run, alternating, on the same tensors.
 *
 *   build/bench/ckpt_save MB DIR [REPS]
 *
 * MB of fp32 state (a third in model.safetensors, two thirds in
 * optimizer.safetensors, 64 tensors each, as a save of weights and AdamW's m
 * and v writes), into a fresh folder under DIR per save (removed after).
 * Every file is fsync'ed as a save does.  Prints each save's times, the
 * medians and their ratios, and whether the two manifests are byte for byte
 * the same. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "ckpt_manifest.h"
#include "safetensors.h"

enum { NT = 64 };

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static char *slurp(const char *path, long *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    *n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)*n + 1);
    if (b && fread(b, 1, (size_t)*n, f) != (size_t)*n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    return b;
}

static void remove_folder(const char *dir)
{
    const char *files[] = { "model.safetensors", "optimizer.safetensors", "config.json", "manifest.json" };
    char path[4096];
    for (int i = 0; i < 4; i++) {
        int n = snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        if (n < 0 || n >= (int)sizeof path) return;  /* too long: remove nothing rather than a truncated path */
        unlink(path);
    }
    rmdir(dir);
}

static const char *meta[] = { "weft_step", "1", "weft_samples_seen", "8", "weft_model", "bench" };

/* One save into dir: the two safetensors files, config.json, the manifest
 * (known: checksums taken while writing); *write_s, *manifest_s its phases. */
static int save(const char *dir, float *const *data, long per, int known_sums, double *write_s,
                double *manifest_s)
{
    char path[4096], err[8192], names[2 * NT][48];
    wf_manifest_known *known = known_sums ? wf_manifest_known_new() : NULL;
    double t0 = now();
    for (int f = 0; f < 2; f++) {
        int n = f ? 2 * NT : NT;  /* optimizer: exp_avg and exp_avg_sq */
        wf_st_tensor t[2 * NT];
        uint32_t crcs[2 * NT];
        for (int i = 0; i < n; i++) {
            snprintf(names[i], sizeof names[i], "%sh.%d.weight", f ? (i < NT ? "exp_avg." : "exp_avg_sq.") : "",
                     i % NT);
            t[i] = (wf_st_tensor){ names[i], 2, { per / 1024, 1024 }, data[f ? NT + i : i] };
        }
        const char *name = f ? "optimizer.safetensors" : "model.safetensors";
        snprintf(path, sizeof path, "%s/%s", dir, name);
        wf_st_sums sums = { 0, 0, crcs };
        if (wf_st_write_sums(path, t, n, meta, 3, known ? &sums : NULL, err, sizeof err) != 0 ||
            (known && wf_manifest_known_add(known, name, t, n, &sums) != 0)) {
            fprintf(stderr, "ckpt_save: %s\n", err);
            return -1;
        }
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *c = fopen(path, "w");
    if (!c || fputs("{\"model_type\": \"gpt2\"}\n", c) < 0 || fclose(c) != 0)
        return -1;
    double t1 = now();
    wf_ckpt_info info = { .step = 1, .samples_seen = 8, .global_batch = 8, .seed = 1 };
    snprintf(info.model, sizeof info.model, "bench");
    if (wf_manifest_write(dir, &info, "{\"model_type\": \"gpt2\"}", known, err, sizeof err) != 0) {
        fprintf(stderr, "ckpt_save: %s\n", err);
        return -1;
    }
    double t2 = now();
    wf_manifest_known_free(known);
    *write_s = t1 - t0;
    *manifest_s = t2 - t1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: ckpt_save MB DIR [REPS]\n");
        return 2;
    }
    long mb = atol(argv[1]);
    int reps = argc > 3 ? atoi(argv[3]) : 5;
    if (mb < 3 || reps < 1 || reps > 50) {
        fprintf(stderr, "ckpt_save: MB >= 3, 1 <= REPS <= 50\n");
        return 2;
    }
    /* 3 * NT tensors of `per` floats (a multiple of 1024) make MB */
    long per = (mb << 20) / 4 / (3 * NT) / 1024 * 1024;
    float *data[3 * NT];
    if (strlen(argv[2]) > 3000) {  /* every path below is DIR plus a short name: none is truncated */
        fprintf(stderr, "ckpt_save: DIR is too long\n");
        return 2;
    }
    srand(1);
    for (int i = 0; i < 3 * NT; i++) {
        data[i] = malloc(sizeof(float) * (size_t)per);
        if (!data[i])
            return 2;
        for (long k = 0; k < per; k++)
            data[i][k] = (float)rand() / RAND_MAX;
    }
    printf("ckpt_save: %.1f MiB of fp32 state in %d tensors, %d saves each way, alternating\n",
           3.0 * NT * per * 4 / (1 << 20), 3 * NT, reps);
    printf("%-16s %10s %12s %10s\n", "checksums", "write s", "manifest s", "total s");
    double w[2][50], m[2][50], tot[2][50];
    int same = 1;
    for (int r = 0; r < reps; r++) {
        char dirs[2][4096];
        for (int k = 0; k < 2; k++) {
            int mode = (r + k) % 2;  /* alternate which goes first */
            snprintf(dirs[mode], sizeof dirs[mode], "%s/ckpt_save.%d.%d", argv[2], (int)getpid(), mode);
            if (mkdir(dirs[mode], 0755) != 0 || save(dirs[mode], data, per, mode, &w[mode][r], &m[mode][r]) != 0)
                return 1;
            tot[mode][r] = w[mode][r] + m[mode][r];
            printf("%-16s %10.3f %12.3f %10.3f\n", mode ? "while writing" : "read back", w[mode][r], m[mode][r],
                   tot[mode][r]);
        }
        char pa[4200], pb[4200];
        long na = -1, nb = -2;
        snprintf(pa, sizeof pa, "%s/manifest.json", dirs[0]);
        snprintf(pb, sizeof pb, "%s/manifest.json", dirs[1]);
        char *x = slurp(pa, &na), *y = slurp(pb, &nb);
        same &= x && y && na == nb && memcmp(x, y, (size_t)na) == 0;
        free(x);
        free(y);
        remove_folder(dirs[0]);
        remove_folder(dirs[1]);
    }
    double mw[2], mm[2], mt[2];
    for (int k = 0; k < 2; k++) {
        mw[k] = median(w[k], reps);
        mm[k] = median(m[k], reps);
        mt[k] = median(tot[k], reps);
    }
    printf("median read back:     write %.3f s, manifest %.3f s, total %.3f s\n", mw[0], mm[0], mt[0]);
    printf("median while writing: write %.3f s, manifest %.3f s, total %.3f s\n", mw[1], mm[1], mt[1]);
    printf("ratio (read back / while writing): manifest %.1fx, total %.2fx\n", mm[0] / mm[1], mt[0] / mt[1]);
    printf("manifests byte for byte the same: %s\n", same ? "yes" : "NO");
    for (int i = 0; i < 3 * NT; i++)
        free(data[i]);
    return same ? 0 : 1;
}
