/* test_safetensors.c: fp32 safetensors checkpoints (runtime/common/safetensors.c).
 * Prints every check; exits non-zero on failure. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "safetensors.h"
#include "scratch_dir.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* A hand-made file: 8-byte length, header JSON as given, data_len bytes. */
static void craft(const char *path, uint64_t hlen_field, const char *json, long data_len)
{
    size_t jl = strlen(json);
    unsigned char *b = calloc(1, 8 + jl + (size_t)data_len + 1);
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(hlen_field >> (8 * i));
    memcpy(b + 8, json, jl);
    spit(path, b, 8 + (long)jl + data_len);
    free(b);
}

static void expect_open_error(const char *what, const char *path, ...)
{
    char err[512] = "";
    wf_st_file *f = NULL;
    int rc = wf_st_open(&f, path, err, sizeof err);
    int ok = rc == -1 && !f && strstr(err, path);
    va_list ap;
    va_start(ap, path);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        if (!strstr(err, w))
            ok = 0;
    va_end(ap);
    check(ok, "%s is rejected: \"%s\"", what, err);
    wf_st_close(f);
}

/* ---- round trip ---------------------------------------------------------- */

enum { C = 16, V = 50 };
static float wte[V * C], attn_w[C * 3 * C], ln_b[C], scal[1];

static void fill(void)
{
    uint32_t s = 12345;
    for (int i = 0; i < V * C; i++) {
        s = s * 1664525u + 1013904223u;
        wte[i] = ((float)(s >> 8) / 16777216.0f - 0.5f) * 0.04f;
    }
    for (int i = 0; i < C * 3 * C; i++)
        attn_w[i] = (float)i * 0.001f - 0.3f;
    for (int i = 0; i < C; i++)
        ln_b[i] = (float)(i % 3) - 1.0f;
    /* odd values must survive bit-exact */
    uint32_t nan_bits = 0x7fc01234u;
    memcpy(&wte[0], &nan_bits, 4);
    wte[1] = -0.0f;
    wte[2] = 1e-45f; /* denormal */
    wte[3] = 3.4028235e38f;
    scal[0] = 2.5f;
}

/* The five tensors both writers are tested on (2-d, 1-d, scalar, empty),
 * their values filled in. */
static void five_tensors(wf_st_tensor t[5])
{
    fill();
    const wf_st_tensor list[5] = {
        {"wte", 2, {V, C}, wte},
        {"h.0.attn.c_attn.weight", 2, {C, 3 * C}, attn_w},
        {"ln_f.bias", 1, {C}, ln_b},
        {"step_scalar", 0, {0}, scal},
        {"empty", 2, {0, 3}, NULL},
    };
    memcpy(t, list, sizeof list);
}

static void test_round_trip(const char *p)
{
    char err[512] = "";
    wf_st_tensor t[5];
    five_tensors(t);
    const char *meta[] = {"format", "pt", "step", "123", "plan", "plans/gpt2 \"small\"\\x\n\xc3\xa9"};
    int rc = wf_st_write(p, t, 5, meta, 3, err, sizeof err);
    check(rc == 0, "write 5 tensors (2-d, 1-d, scalar, empty) + 3 metadata pairs%s%s",
          rc ? ": " : "", rc ? err : "");
    check(count_tmp_files() == 0, "no temporary file left behind");

    /* the bytes on disk follow the format */
    long len = 0;
    unsigned char *raw = slurp(p, &len);
    uint64_t hl = 0;
    for (int i = 0; raw && i < 8; i++)
        hl |= (uint64_t)raw[i] << (8 * i);
    long data_bytes = 4L * (V * C + C * 3 * C + C + 1);
    check(raw && hl % 8 == 0 && (long)(8 + hl) + data_bytes == len,
          "file = 8 + header %llu (multiple of 8, data 8-byte aligned) + %ld data bytes",
          (unsigned long long)hl, data_bytes);
    int pad_ok = raw && hl >= 1;
    for (uint64_t i = hl; pad_ok && i > 0 && raw[8 + i - 1] != '}'; i--)
        pad_ok = raw[8 + i - 1] == ' ';
    check(pad_ok, "header padding is spaces after the closing brace");
    cJSON *j = raw ? cJSON_ParseWithLength((const char *)raw + 8, (size_t)hl) : NULL;
    cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "wte");
    cJSON *off = cJSON_GetObjectItemCaseSensitive(w, "data_offsets");
    cJSON *a = cJSON_GetObjectItemCaseSensitive(j, "h.0.attn.c_attn.weight");
    cJSON *aoff = cJSON_GetObjectItemCaseSensitive(a, "data_offsets");
    cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "__metadata__");
    cJSON *s0 = cJSON_GetObjectItemCaseSensitive(j, "step_scalar");
    check(j && cJSON_GetArraySize(off) == 2 && cJSON_GetArrayItem(off, 0)->valuedouble == 0 &&
              cJSON_GetArrayItem(off, 1)->valuedouble == 4.0 * V * C &&
              cJSON_GetArrayItem(aoff, 0)->valuedouble == 4.0 * V * C &&
              !strcmp(cJSON_GetObjectItemCaseSensitive(w, "dtype")->valuestring, "F32") &&
              cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(s0, "shape")) == 0 &&
              cJSON_IsString(cJSON_GetObjectItemCaseSensitive(m, "step")),
          "header JSON: F32 dtype, offsets in the order given, scalar shape [], "
          "__metadata__ strings");
    check(raw && !memcmp(raw + 8 + hl, wte, 4 * V * C) &&
              !memcmp(raw + 8 + hl + 4 * V * C, attn_w, sizeof attn_w),
          "raw data is the little-endian floats, back to back");
    cJSON_Delete(j);
    free(raw);

    wf_st_file *f = NULL;
    rc = wf_st_open(&f, p, err, sizeof err);
    check(rc == 0 && f, "wf_st_open (%s)", rc ? err : "");
    if (!f)
        return;
    check(wf_st_count(f) == 5, "wf_st_count = %d", wf_st_count(f));
    int names_ok = 1;
    for (int i = 0; i < 5; i++) {
        const char *nm = wf_st_name(f, i);
        /* the empty tensor sits at the end offset, so it sorts last too */
        if (!nm || strcmp(nm, t[i].name))
            names_ok = 0;
    }
    check(names_ok && wf_st_name(f, 5) == NULL && wf_st_name(f, -1) == NULL,
          "wf_st_name gives the tensors in the order written, NULL out of range");
    const char *pl = wf_st_meta(f, "plan");
    check(wf_st_meta(f, "format") && !strcmp(wf_st_meta(f, "format"), "pt") &&
              !strcmp(wf_st_meta(f, "step"), "123") && pl && !strcmp(pl, meta[5]),
          "metadata round trip, including quotes, backslash, newline and UTF-8");
    check(wf_st_meta(f, "absent") == NULL, "absent metadata key gives NULL");

    static float r_wte[V * C], r_attn[C * 3 * C], r_ln[C], r_s[1];
    long sh_wte[] = {V, C}, sh_attn[] = {C, 3 * C}, sh_ln[] = {C}, sh_empty[] = {0, 3};
    memset(r_wte, 0xff, sizeof r_wte);
    int ok = wf_st_read(f, "wte", 2, sh_wte, r_wte, err, sizeof err) == 0 &&
             wf_st_read(f, "h.0.attn.c_attn.weight", 2, sh_attn, r_attn, err, sizeof err) == 0 &&
             wf_st_read(f, "ln_f.bias", 1, sh_ln, r_ln, err, sizeof err) == 0 &&
             wf_st_read(f, "step_scalar", 0, NULL, r_s, err, sizeof err) == 0 &&
             wf_st_read(f, "empty", 2, sh_empty, NULL, err, sizeof err) == 0;
    check(ok, "wf_st_read every tensor (%s)", ok ? "" : err);
    check(!memcmp(r_wte, wte, sizeof wte) && !memcmp(r_attn, attn_w, sizeof attn_w) &&
              !memcmp(r_ln, ln_b, sizeof ln_b) && r_s[0] == 2.5f,
          "values round trip bit-exact (NaN payload, -0.0, denormal, FLT_MAX)");
    long got[4] = {0};
    check(wf_st_shape(f, "h.0.attn.c_attn.weight", got, 4) == 2 && got[0] == C &&
              got[1] == 3 * C && wf_st_shape(f, "nope", got, 4) == -1,
          "wf_st_shape reports rank and dims");

    /* a range of a tensor in file order: [lo, hi) and nothing else written */
    {
        static float part[C * 3 * C + 2];
        long lo = 5, hi = 3 * C + 7;  /* across a row boundary */
        for (size_t i = 0; i < sizeof part / sizeof *part; i++) part[i] = -7.0f;
        rc = wf_st_read_range(f, "h.0.attn.c_attn.weight", 2, sh_attn, lo, hi, part + 1, err, sizeof err);
        check(rc == 0 && !memcmp(part + 1, attn_w + lo, sizeof(float) * (size_t)(hi - lo)) &&
                  part[0] == -7.0f && part[1 + hi - lo] == -7.0f,
              "wf_st_read_range: elements [%ld, %ld) bit-exact, nothing outside (%s)", lo, hi, rc ? err : "");
        rc = wf_st_read_range(f, "wte", 2, sh_wte, V * C - 1, V * C, part, err, sizeof err) |
             wf_st_read_range(f, "wte", 2, sh_wte, 3, 3, NULL, err, sizeof err);
        check(rc == 0 && !memcmp(part, wte + V * C - 1, sizeof(float)), "wf_st_read_range: the last element; an empty range");
        rc = wf_st_read_range(f, "wte", 2, sh_wte, 1, V * C + 1, part, err, sizeof err);
        check(rc == -1 && has_words(err, "elements [1,", "of tensor wte", NULL), "range past the end: \"%s\"", err);
        rc = wf_st_read_range(f, "wte", 2, sh_attn, 0, 1, part, err, sizeof err);
        check(rc == -1 && has_words(err, "tensor wte has shape", NULL), "range with the wrong shape: \"%s\"", err);
        rc = wf_st_read_range(f, "nope", 2, sh_wte, 0, 1, part, err, sizeof err);
        check(rc == -1 && has_words(err, "no tensor named nope", NULL), "range of a missing tensor: \"%s\"", err);
        rc = wf_st_read_range(f, "wte", 2, sh_wte, 4, 2, part, err, sizeof err);
        check(rc == -1, "range with hi < lo refused");
    }

    /* shape mismatch and missing tensors */
    long want[] = {32, 96};
    rc = wf_st_read(f, "h.0.attn.c_attn.weight", 2, want, r_attn, err, sizeof err);
    char expect[700];
    snprintf(expect, sizeof expect,
             "checkpoint %s: tensor h.0.attn.c_attn.weight has shape [16,48], this model "
             "needs [32,96]",
             p);
    check(rc == -1 && !strcmp(err, expect), "shape mismatch: \"%s\"", err);
    long want3[] = {16, 48, 1};
    rc = wf_st_read(f, "h.0.attn.c_attn.weight", 3, want3, r_attn, err, sizeof err);
    check(rc == -1 && has_words(err, "has shape [16,48]", "needs [16,48,1]", NULL),
          "rank mismatch: \"%s\"", err);
    rc = wf_st_read(f, "step_scalar", 1, sh_ln, r_ln, err, sizeof err);
    check(rc == -1 && has_words(err, "has shape []", "needs [16]", NULL),
          "scalar vs vector: \"%s\"", err);
    rc = wf_st_read(f, "h.1.mlp.c_fc.weight", 2, sh_attn, r_attn, err, sizeof err);
    check(rc == -1 && has_words(err, p, "no tensor named h.1.mlp.c_fc.weight", "[16,48]", NULL),
          "missing tensor: \"%s\"", err);
    wf_st_close(f);

    /* no tensors, no metadata */
    char p0[512];
    path_in(p0, sizeof p0, "nothing.safetensors");
    err[0] = '\0';
    rc = wf_st_write(p0, NULL, 0, NULL, 0, err, sizeof err);
    f = NULL;
    int rc2 = rc == 0 ? wf_st_open(&f, p0, err, sizeof err) : -1;
    check(rc == 0 && rc2 == 0 && wf_st_count(f) == 0 && wf_st_meta(f, "x") == NULL,
          "an empty checkpoint writes and reads back (%s)", err);
    wf_st_close(f);
}

/* ---- corrupt files -------------------------------------------------------- */

static void test_corrupt(const char *good)
{
    char p[512];
    long len;
    unsigned char *raw = slurp(good, &len);

    path_in(p, sizeof p, "short.safetensors");
    spit(p, raw, 5);
    expect_open_error("a 5-byte file", p, "too small", "8-byte", NULL);

    path_in(p, sizeof p, "hlen.safetensors");
    unsigned char *b = malloc((size_t)len);
    memcpy(b, raw, (size_t)len);
    b[5] = 0x01; /* header length ~ 2^40 */
    spit(p, b, len);
    expect_open_error("a huge header length", p, "corrupt header", "header length", NULL);

    memcpy(b, raw, (size_t)len);
    b[8] = '#'; /* the opening brace */
    path_in(p, sizeof p, "json.safetensors");
    spit(p, b, len);
    expect_open_error("a header that is not JSON", p, "corrupt header", "does not parse", NULL);

    path_in(p, sizeof p, "trunc.safetensors");
    spit(p, raw, len - 4);
    expect_open_error("a file missing its last float", p, "step_scalar", "beyond",
                      "truncated", NULL);

    const char *j1 = "{\"w\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,4]}}";
    path_in(p, sizeof p, "f16.safetensors");
    craft(p, strlen(j1), j1, 4);
    expect_open_error("dtype F16", p, "tensor w", "dtype F16", "only F32", NULL);

    const char *j2 = "{\"w\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,20]}}";
    path_in(p, sizeof p, "span.safetensors");
    craft(p, strlen(j2), j2, 20);
    expect_open_error("offsets inconsistent with the shape", p, "[2,3]", "24 bytes",
                      "span 20", NULL);

    const char *j3 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                     "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}";
    path_in(p, sizeof p, "overlap.safetensors");
    craft(p, strlen(j3), j3, 12);
    expect_open_error("overlapping tensors", p, "tensor b", "contiguous", NULL);

    const char *j4 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    path_in(p, sizeof p, "trailing.safetensors");
    craft(p, strlen(j4), j4, 12);
    expect_open_error("bytes after the last tensor", p, "trailing bytes", NULL);

    const char *j5 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}";
    path_in(p, sizeof p, "negshape.safetensors");
    craft(p, strlen(j5), j5, 8);
    expect_open_error("a negative dimension", p, "invalid shape", NULL);

    const char *j6 = "{\"__metadata__\":{\"k\":3}}";
    path_in(p, sizeof p, "meta.safetensors");
    craft(p, strlen(j6), j6, 0);
    expect_open_error("non-string metadata", p, "__metadata__", "not a string", NULL);

    const char *j7 = "[1,2]";
    path_in(p, sizeof p, "array.safetensors");
    craft(p, strlen(j7), j7, 0);
    expect_open_error("a header that is an array", p, "corrupt header", "not an object", NULL);

    const char *j8 = "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                     "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}";
    path_in(p, sizeof p, "dup.safetensors");
    craft(p, strlen(j8), j8, 8);
    expect_open_error("a duplicate tensor name", p, "appears twice", NULL);

    const char *j9 = "{}  x  ";
    path_in(p, sizeof p, "junk.safetensors");
    craft(p, strlen(j9), j9, 0);
    expect_open_error("junk after the JSON", p, "unexpected bytes", NULL);

    path_in(p, sizeof p, "missing.safetensors");
    expect_open_error("a missing file", p, "cannot open", NULL);

    /* a hand-made file without padding and with unaligned data still reads */
    const char *ja = "{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}";
    path_in(p, sizeof p, "unpadded.safetensors");
    size_t jl = strlen(ja);
    unsigned char *u = calloc(1, 8 + jl + 8);
    u[0] = (unsigned char)jl;
    memcpy(u + 8, ja, jl);
    float two[2] = {1.5f, -7.25f};
    memcpy(u + 8 + jl, two, 8);
    spit(p, u, (long)(8 + jl + 8));
    free(u);
    char err[512] = "";
    wf_st_file *f = NULL;
    float back[2] = {0, 0};
    long sh2[] = {2};
    int rc = wf_st_open(&f, p, err, sizeof err);
    rc = rc ? rc : wf_st_read(f, "a", 1, sh2, back, err, sizeof err);
    check(rc == 0 && back[0] == 1.5f && back[1] == -7.25f,
          "an unpadded header (data at offset %zu, not aligned) reads (%s)", 8 + jl, err);
    wf_st_close(f);
    free(b);
    free(raw);
}

/* ---- failed writes --------------------------------------------------------- */

static void test_failed_writes(const char *p)
{
    char err[512] = "", bad[700];
    long len0, len1;
    unsigned char *before = slurp(p, &len0);
    float x[4] = {1, 2, 3, 4};
    wf_st_tensor one = {"x", 1, {4}, x};

    snprintf(bad, sizeof bad, "%s/no/such/dir/ck.safetensors", dir);
    int rc = wf_st_write(bad, &one, 1, NULL, 0, err, sizeof err);
    check(rc == -1 && has_words(err, bad, "cannot create", NULL),
          "write into a missing directory fails: \"%s\"", err);
    snprintf(bad, sizeof bad, "%s/inside.safetensors", p); /* parent is a regular file */
    rc = wf_st_write(bad, &one, 1, NULL, 0, err, sizeof err);
    check(rc == -1 && strstr(err, bad), "write below a regular file fails: \"%s\"", err);

    wf_st_tensor dup[2] = {one, one};
    rc = wf_st_write(p, dup, 2, NULL, 0, err, sizeof err);
    unsigned char *after = slurp(p, &len1);
    check(rc == -1 && has_words(err, "x", "twice", NULL) && len1 == len0 &&
              !memcmp(before, after, (size_t)len0),
          "duplicate tensor names are refused, old file intact: \"%s\"", err);
    free(after);

    wf_st_tensor neg = {"y", 2, {3, -1}, x};
    rc = wf_st_write(p, &neg, 1, NULL, 0, err, sizeof err);
    check(rc == -1 && has_words(err, "negative", NULL), "negative dimension refused: \"%s\"",
          err);
    wf_st_tensor five = {"z", 5, {1, 1, 1, 1}, x};
    rc = wf_st_write(p, &five, 1, NULL, 0, err, sizeof err);
    check(rc == -1 && has_words(err, "ndim 5", "0..4", NULL), "ndim 5 refused: \"%s\"", err);
    wf_st_tensor nodata = {"z", 1, {4}, NULL};
    rc = wf_st_write(p, &nodata, 1, NULL, 0, err, sizeof err);
    check(rc == -1 && has_words(err, "no data", NULL), "NULL data refused: \"%s\"", err);

    /* a write that fails partway (the disk fills up): lower the file size limit
     * below the checkpoint's size so the write of the temporary fails */
    enum { BIG = 1 << 18 };
    float *big = calloc(BIG, sizeof *big);
    wf_st_tensor bt = {"big", 2, {512, BIG / 512}, big};
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 16384;
    signal(SIGXFSZ, SIG_IGN);
    int set = setrlimit(RLIMIT_FSIZE, &lim) == 0;
    rc = wf_st_write(p, &bt, 1, NULL, 0, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    after = slurp(p, &len1);
    check(set && rc == -1 && has_words(err, p, "File too large", NULL) && len1 == len0 &&
              !memcmp(before, after, (size_t)len0),
          "a write failing partway (file size limit) leaves the previous checkpoint "
          "byte-identical: \"%s\"",
          err);
    check(count_tmp_files() == 0, "and removes its temporary file");
    free(after);

    wf_st_file *f = NULL;
    rc = wf_st_open(&f, p, err, sizeof err);
    check(rc == 0 && wf_st_count(f) == 5, "the previous checkpoint still opens");
    wf_st_close(f);

    rc = wf_st_write(p, &bt, 1, NULL, 0, err, sizeof err);
    f = NULL;
    float *rb = malloc(BIG * sizeof *rb);
    long shb[] = {512, BIG / 512};
    int rc2 = rc ? -1 : wf_st_open(&f, p, err, sizeof err);
    check(rc == 0 && rc2 == 0 && wf_st_count(f) == 1 &&
              wf_st_read(f, "big", 2, shb, rb, err, sizeof err) == 0 &&
              !memcmp(rb, big, BIG * sizeof *rb),
          "without the limit the same write replaces the checkpoint");
    wf_st_close(f);
    free(rb);
    free(big);
    free(before);
}

/* ---- optional cross-check with Python ----------------------------------- */

static void cross_check(const char *p)
{
    if (system("python3 -c 'import numpy, safetensors' >/dev/null 2>&1") != 0) {
        printf("skip: python3 with numpy and safetensors not available, no cross-check\n");
        return;
    }
    char cmd[1400];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import sys; from safetensors.numpy import load_file; "
             "from safetensors import safe_open; d = load_file(sys.argv[1]); "
             "m = safe_open(sys.argv[1], \"np\").metadata(); "
             "ok = d[\"h.0.attn.c_attn.weight\"].shape == (16, 48) and "
             "abs(float(d[\"h.0.attn.c_attn.weight\"][1, 2]) - (50 * 0.001 - 0.3)) < 1e-6 and "
             "d[\"step_scalar\"].shape == () and m[\"step\"] == \"123\"; "
             "sys.exit(0 if ok else 1)' '%s'",
             p);
    check(system(cmd) == 0, "python safetensors reads the checkpoint we wrote");
}

/* ---- many tensors, unusual files ------------------------------------------ */

/* n tensors of one float each; with dup, the last repeats the first's name. */
static char *many_tensors_json(int n, int dup)
{
    char *j = malloc((size_t)n * 80 + 16), *w = j;
    w += sprintf(w, "{");
    for (int i = 0; i < n; i++)
        w += sprintf(w, "%s\"t%d\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[%d,%d]}",
                     i ? "," : "", dup && i == n - 1 ? 0 : i, 4 * i, 4 * i + 4);
    sprintf(w, "}");
    return j;
}

static void test_many_and_odd(void)
{
    char p[512], err[512];
    enum { N = 40000 };
    /* the duplicate-name check sorts (n log n): 40k names was 32 s pairwise */
    char *j = many_tensors_json(N, 1);
    path_in(p, sizeof p, "dup40k.safetensors");
    craft(p, strlen(j), j, 4L * N);
    expect_open_error("40000 tensors, the last named like the first", p, "key t0 appears twice", NULL);
    free(j);
    j = many_tensors_json(N, 0);
    path_in(p, sizeof p, "many.safetensors");
    craft(p, strlen(j), j, 4L * N);
    free(j);
    wf_st_file *f = NULL;
    long shape[8];
    int ok = wf_st_open(&f, p, err, sizeof err) == 0 && wf_st_count(f) == N;
    for (int i = 0; ok && i < N; i += 997) {  /* lookups by name (a binary search) */
        char name[16];
        snprintf(name, sizeof name, "t%d", i);
        size_t bytes = 0;
        ok = wf_st_shape(f, name, shape, 8) == 1 && wf_st_data(f, name, &bytes) != NULL && bytes == 4;
    }
    check(ok && wf_st_shape(f, "t40000", shape, 8) == -1 && !wf_st_data(f, "nope", NULL),
          "40000 distinct tensors open and are found by name (%s)", ok ? "" : err);
    wf_st_close(f);

    /* a file may hold up to 8 dimensions: all are reported */
    const char *j8 = "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,2,1,2,1,2,1,2],\"data_offsets\":[0,64]}}";
    path_in(p, sizeof p, "rank8.safetensors");
    craft(p, strlen(j8), j8, 64);
    f = NULL;
    ok = wf_st_open(&f, p, err, sizeof err) == 0 && wf_st_shape(f, "x", shape, 8) == 8;
    for (int d = 0; ok && d < 8; d++)
        ok = shape[d] == 1 + d % 2;
    check(ok, "an 8-dimensional tensor's shape is read whole");
    wf_st_close(f);

    /* a FIFO is refused at once: opening it must not wait for a writer */
    path_in(p, sizeof p, "fifo.safetensors");
    if (mkfifo(p, 0600) == 0) {
        alarm(20);  /* a hang fails the test instead of stalling it */
        expect_open_error("a FIFO", p, "not a regular file", "a FIFO", NULL);
        alarm(0);
        unlink(p);
    } else {
        check(0, "mkfifo %s", p);
    }
}

/* The streaming writer: the same list written in pieces that span tensors
 * gives wf_st_write's bytes and checksums; too few or too many bytes are
 * refused with the previous file intact and no temporary left. */
static void test_streamed(const char *dest)
{
    char err[512] = "", p[600], q[700];
    snprintf(p, sizeof p, "%s.whole", dest);
    wf_st_tensor t[5];
    five_tensors(t);
    const char *meta[] = {"format", "pt", "step", "123"};
    uint32_t crc_a[5], crc_b[5];
    wf_st_sums a = {0, 0, crc_a}, b = {0, 0, crc_b};
    snprintf(q, sizeof q, "%s.streamed", p);
    int rc = wf_st_write_sums(p, t, 5, meta, 2, &a, err, sizeof err);
    /* every value in one buffer, as the tensors follow one another */
    long n = V * C + C * 3 * C + C + 1;
    float *all = malloc(sizeof(float) * (size_t)n);
    memcpy(all, wte, sizeof wte);
    memcpy(all + V * C, attn_w, sizeof attn_w);
    memcpy(all + V * C + C * 3 * C, ln_b, sizeof ln_b);
    all[n - 1] = scal[0];
    wf_st_writer *w;
    rc |= wf_st_writer_open(&w, q, t, 5, meta, 2, 1, err, sizeof err);
    for (long at = 0; rc == 0 && at < n; at += 250)  /* 250 floats: pieces across every boundary */
        rc = wf_st_writer_floats(w, all + at, n - at < 250 ? n - at : 250, err, sizeof err);
    rc |= wf_st_writer_finish(w, &b, err, sizeof err);
    long la, lb;
    unsigned char *x = slurp(p, &la), *y = slurp(q, &lb);
    check(rc == 0 && x && y && la == lb && !memcmp(x, y, (size_t)la),
          "streamed in 250-float pieces: the same %ld bytes as wf_st_write%s%s", la, rc ? ": " : "", rc ? err : "");
    check(a.crc == b.crc && a.bytes == b.bytes && !memcmp(crc_a, crc_b, sizeof crc_a),
          "... and the same file and tensor checksums");
    free(y);

    rc = wf_st_writer_open(&w, p, t, 5, meta, 2, 0, err, sizeof err);
    rc |= wf_st_writer_floats(w, all, n - 1, err, sizeof err);
    int fin = wf_st_writer_finish(w, NULL, err, sizeof err);
    y = slurp(p, &lb);
    check(rc == 0 && fin == -1 && strstr(err, "bytes") && la == lb && !memcmp(x, y, (size_t)la) &&
              count_tmp_files() == 0,
          "a file one float short is refused, the previous file intact: \"%s\"", err);
    free(y);
    rc = wf_st_writer_open(&w, p, t, 3, meta, 2, 0, err, sizeof err);
    int over = wf_st_writer_floats(w, all, n, err, sizeof err);
    wf_st_writer_abort(w);
    y = slurp(p, &lb);
    check(rc == 0 && over == -1 && strstr(err, "more than") && la == lb && !memcmp(x, y, (size_t)la) &&
              count_tmp_files() == 0,
          "bytes beyond the tensors are refused, aborted, the previous file intact: \"%s\"", err);
    free(x);
    free(y);
    free(all);
    remove(p);
    remove(q);
}

int main(void)
{
    if (make_dir("weft_test_st") != 0)
        return 2;
    printf("test_safetensors: working in %s\n", dir);
    char p[512];
    path_in(p, sizeof p, "model.safetensors");
    test_round_trip(p);
    test_streamed(p);
    cross_check(p);
    test_corrupt(p);
    test_failed_writes(p);
    test_many_and_odd();
    remove_dir();
    printf("test_safetensors: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
