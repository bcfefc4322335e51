/* test_ckpt_manifest.c: the manifest from checksums taken while writing
 * (wf_st_write_sums, wf_manifest_known) is byte for byte the manifest that
 * reading the files back gives (runtime/common/ckpt_manifest.c), the files
 * themselves are the same, the folder verifies, and a recorded size that the
 * file on disk does not have is refused.  A stage writer's checksums handed
 * over through a file (wf_manifest_known_save / _load) give the same
 * manifest; a Hugging Face sharded set's index (ckpt_shards.h) lists every
 * tensor once with total_size their bytes, reads back as one set, and a name
 * in two shards is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_manifest.h"
#include "ckpt_shards.h"
#include "crc32c.h"
#include "safetensors.h"

static int n_pass, n_fail;

static void check(int ok, const char *what)
{
    printf("%s: %s\n", ok ? "ok  " : "FAIL", what);
    ok ? n_pass++ : n_fail++;
}

/* a file's bytes (the caller frees), *n its size */
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

static int same_file(const char *a, const char *b)
{
    long na = -1, nb = -2;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    int same = x && y && na == nb && memcmp(x, y, (size_t)na) == 0;
    free(x);
    free(y);
    return same;
}

enum { NT = 5 };
static const char *names[NT] = { "wte.weight", "h.0.ln_1.bias", "scale", "empty", "h.0.attn.c_attn.weight" };
static const int ndims[NT] = { 2, 1, 0, 1, 3 };
static const long shapes[NT][4] = { { 300, 64 }, { 64 }, { 0 }, { 0 }, { 3, 64, 17 } };

static const char *meta[] = { "weft_step", "4", "weft_samples_seen", "32", "weft_model", "test model" };

/* dir/NAME holding tensors [lo, hi) of the five (or, dup, wte.weight too) */
static int write_shard(const char *dir, const char *name, float *const *data, int lo, int hi, int dup)
{
    char path[512], err[512];
    wf_st_tensor t[NT + 1];
    int n = 0;
    for (int i = lo; i < hi; i++, n++) {
        t[n].name = names[i];
        t[n].ndim = ndims[i];
        memcpy(t[n].shape, shapes[i], sizeof t[n].shape);
        t[n].data = data[i];
    }
    if (dup) {
        t[n] = t[0];
        t[n].name = names[0];
        t[n].ndim = ndims[0];
        memcpy(t[n].shape, shapes[0], sizeof t[n].shape);
        t[n++].data = data[0];
    }
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (wf_st_write(path, t, n, meta, 3, err, sizeof err) != 0) {
        printf("write: %s\n", err);
        return -1;
    }
    return 0;
}

/* Writes model.safetensors, optimizer.safetensors and config.json into dir,
 * with their checksums recorded in known when it is given. */
static int write_folder(const char *dir, float *const *data, wf_manifest_known *known)
{
    char path[512], err[512];
    const char *files[2] = { "model.safetensors", "optimizer.safetensors" };
    for (int f = 0; f < 2; f++) {
        wf_st_tensor t[NT];
        char tn[NT][64];
        for (int i = 0; i < NT; i++) {
            snprintf(tn[i], sizeof tn[i], "%s%s", f ? "exp_avg." : "", names[i]);
            t[i].name = tn[i];
            t[i].ndim = ndims[i];
            memcpy(t[i].shape, shapes[i], sizeof t[i].shape);
            t[i].data = data[i] + f;  /* the optimizer's values differ from the model's */
        }
        snprintf(path, sizeof path, "%s/%s", dir, files[f]);
        uint32_t crcs[NT];
        wf_st_sums sums = { 0, 0, crcs };
        if (wf_st_write_sums(path, t, NT, meta, 3, known ? &sums : NULL, err, sizeof err) != 0) {
            printf("write: %s\n", err);
            return -1;
        }
        if (known) {
            long n;
            char *bytes = slurp(path, &n);
            check(bytes && n == sums.bytes && wf_crc32c(0, bytes, (size_t)n) == sums.crc,
                  "the file's size and checksum taken while writing are the file's on disk");
            free(bytes);
            if (wf_manifest_known_add(known, files[f], t, NT, &sums) != 0)
                return -1;
        }
    }
    snprintf(path, sizeof path, "%s/config.json", dir);
    FILE *c = fopen(path, "w");
    if (!c)
        return -1;
    fputs("{\"model_type\": \"gpt2\"}\n", c);
    return fclose(c);
}

int main(void)
{
    char root[] = "/tmp/weft-manifest.XXXXXX", a[64], b[64], err[1024];
    if (!mkdtemp(root))
        return 2;
    snprintf(a, sizeof a, "%s/read", root);
    snprintf(b, sizeof b, "%s/known", root);
    mkdir(a, 0755);
    mkdir(b, 0755);

    float *data[NT];
    srand(3);
    for (int i = 0; i < NT; i++) {
        long n = 1;
        for (int d = 0; d < ndims[i]; d++)
            n *= shapes[i][d];
        data[i] = malloc(sizeof(float) * (size_t)(n + 1));  /* + 1: the optimizer's start one later */
        for (long k = 0; k <= n; k++)
            data[i][k] = (float)rand() / RAND_MAX - 0.5f;
    }
    wf_ckpt_info info = { .step = 4, .samples_seen = 32, .global_batch = 8, .seed = 1 };
    snprintf(info.plan, sizeof info.plan, "plans/test.lua");
    snprintf(info.model, sizeof info.model, "test model");
    const char *config = "{\"model_type\": \"gpt2\"}";

    wf_manifest_known *known = wf_manifest_known_new();
    int ok = write_folder(a, data, NULL) == 0 && write_folder(b, data, known) == 0;
    check(ok, "both folders written");
    check(wf_manifest_write(a, &info, config, NULL, err, sizeof err) == 0, "manifest from reading the files back");
    check(wf_manifest_write(b, &info, config, known, err, sizeof err) == 0, "manifest from the recorded checksums");
    char pa[128], pb[128];
    const char *files[] = { "model.safetensors", "optimizer.safetensors", "config.json", "manifest.json" };
    for (int i = 0; i < 4; i++) {
        snprintf(pa, sizeof pa, "%s/%s", a, files[i]);
        snprintf(pb, sizeof pb, "%s/%s", b, files[i]);
        char what[128];
        snprintf(what, sizeof what, "%s is byte for byte the same either way", files[i]);
        check(same_file(pa, pb), what);
    }
    wf_ckpt_info got;
    int v = wf_ckpt_verify(b, &got, err, sizeof err);
    if (v != 0)
        printf("verify: %s\n", err);
    check(v == 0 && got.step == 4, "the folder written with recorded checksums verifies");

    /* a stage writer's checksums, handed over through a file */
    char hand[128], c3[64];
    snprintf(hand, sizeof hand, "%s/.sums.json", root);
    wf_manifest_known *back = wf_manifest_known_new();
    snprintf(c3, sizeof c3, "%s/handed", root);
    mkdir(c3, 0755);
    ok = wf_manifest_known_save(known, hand, err, sizeof err) == 0 &&
         wf_manifest_known_load(back, hand, err, sizeof err) == 0 && write_folder(c3, data, NULL) == 0 &&
         wf_manifest_write(c3, &info, config, back, err, sizeof err) == 0;
    snprintf(pa, sizeof pa, "%s/manifest.json", a);
    snprintf(pb, sizeof pb, "%s/manifest.json", c3);
    check(ok && same_file(pa, pb), "checksums saved to a file and loaded back give the same manifest");
    wf_manifest_known_free(back);

    /* a sharded set: two shards, the index from their headers */
    char sh[64];
    snprintf(sh, sizeof sh, "%s/sharded", root);
    mkdir(sh, 0755);
    double total = -1, want = 0;
    for (int i = 0; i < NT; i++) {
        long n = 1;
        for (int d = 0; d < ndims[i]; d++)
            n *= shapes[i][d];
        want += 4.0 * (double)n;
    }
    ok = write_shard(sh, "model-00001-of-00002.safetensors", data, 0, 3, 0) == 0 &&
         write_shard(sh, "model-00002-of-00002.safetensors", data, 3, NT, 0) == 0 &&
         wf_ckpt_index_write(sh, "model", 2, &total, err, sizeof err) == 0;
    check(ok && total == want, "the index's total_size is the shards' tensor bytes");
    wf_ckpt_set *set = NULL;
    snprintf(pa, sizeof pa, "%s/model.safetensors", sh);  /* absent: the index beside it */
    ok = wf_ckpt_set_open(&set, pa, err, sizeof err) == 0;
    if (!ok)
        printf("      (%s)\n", err);
    int right = ok && wf_ckpt_set_count(set) == NT && wf_ckpt_set_files(set) == 2;
    for (int i = 0; right && i < NT; i++) {
        long shape[4];
        const wf_st_file *in = wf_ckpt_set_file(set, names[i]);
        right = in && (in == wf_ckpt_set_first(set)) == (i < 3);
        right = right && wf_st_shape(in, names[i], shape, 4) == ndims[i];
    }
    check(right, "the set reads back: every tensor, each from its own shard");
    wf_ckpt_set_close(set);
    ok = write_shard(sh, "model-00002-of-00002.safetensors", data, 3, NT, 1) == 0 &&
         wf_ckpt_index_write(sh, "model", 2, &total, err, sizeof err) != 0;
    check(ok && strstr(err, "wte.weight") && strstr(err, "model-00001-of-00002.safetensors"),
          "a name in two shards is refused, naming it and both shards");
    if (ok)
        printf("      (%s)\n", err);

    /* a file changed after its checksums were taken: its recorded size is
     * checked against the disk (the load's checksum check catches the rest) */
    snprintf(pb, sizeof pb, "%s/model.safetensors", b);
    FILE *f = fopen(pb, "ab");
    fputc(0, f);
    fclose(f);
    int rc = wf_manifest_write(b, &info, config, known, err, sizeof err);
    check(rc != 0 && strstr(err, "model.safetensors") && strstr(err, "on disk"),
          "a file whose size is not the recorded one is refused, named");
    if (rc != 0)
        printf("      (%s)\n", err);
    wf_manifest_known_free(known);
    for (int i = 0; i < NT; i++)
        free(data[i]);
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);  /* this test's own folder */
    if (system(cmd) != 0)
        return 2;
    printf("test_ckpt_manifest: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
