/* test_data.c: .bin token files -- writing (compiler/datagen.c) and sampling
 * (runtime/common/data.c).  Prints every check; exits non-zero on failure. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "data.h"
#include "datagen.h"
#include "scratch_dir.h"

#include <dirent.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static void put32(unsigned char *p, int32_t v)
{
    uint32_t u = (uint32_t)v;
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(u >> (8 * i));
}

/* Opening path must fail with every NULL-terminated word in the message. */
static void expect_open_error(const char *what, const char *path, int vocab, int seq, ...)
{
    char err[512] = "";
    wf_data *d = NULL;
    int rc = wf_data_open(&d, path, vocab, seq, err, sizeof err);
    int ok = rc == -1 && d == NULL && strstr(err, path) != NULL;
    va_list ap;
    va_start(ap, seq);
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        if (!strstr(err, w))
            ok = 0;
    va_end(ap);
    check(ok, "%s is rejected: \"%s\"", what, err);
    wf_data_close(d);
}

/* ---- files that are not, or no longer, a token file ------------------------ */

/* A FIFO (open used to wait for a writer for ever: an alarm ends the test if
 * it does) and a directory are refused at open, naming what they are; a
 * file truncated after open gives an error naming it from wf_data_sample
 * (it used to be a SIGBUS through the mapping). */
static void test_not_regular(void)
{
    char p[512], err[512] = "";
    path_in(p, sizeof p, "fifo.bin");
    check(mkfifo(p, 0600) == 0, "mkfifo %s", p);
    alarm(20);
    expect_open_error("a FIFO", p, 256, 8, "not a regular file", "a FIFO", NULL);
    alarm(0);
    path_in(p, sizeof p, "subdir.bin");
    check(mkdir(p, 0700) == 0, "mkdir %s", p);
    expect_open_error("a directory", p, 256, 8, "not a regular file", "a directory", NULL);
    rmdir(p);

    enum { N = 4000, SEQ = 16 };
    uint16_t *tok = malloc(N * sizeof *tok);
    for (int i = 0; i < N; i++)
        tok[i] = (uint16_t)(i % 200);
    path_in(p, sizeof p, "shrinks.bin");
    wf_write_bin(p, tok, N, err, sizeof err);
    free(tok);
    wf_data *d = NULL;
    check(wf_data_open(&d, p, 256, SEQ, err, sizeof err) == 0, "open %s (%s)", p, err);
    if (!d)
        return;
    int32_t in[SEQ], tg[SEQ];
    check(wf_data_sample(d, 1, 0, in, tg, err, sizeof err) == 0, "sample before truncation (%s)", err);
    check(truncate(p, 1024 + 2 * 8) == 0, "truncate %s to 8 tokens", p);
    int failed = 0, named = 1;
    for (uint64_t g = 0; g < 20; g++) { /* every window (17 tokens) ends past 8 tokens */
        err[0] = '\0';
        if (wf_data_sample(d, 1, g, in, tg, err, sizeof err) != 0) {
            failed++;
            named = named && has_words(err, p, "truncated while in use", "now", NULL);
        }
    }
    check(failed == 20 && named, "samples after truncation fail naming the file (%d of 20): \"%s\"", failed,
          err);
    wf_data_close(d);
}

/* ---- basic reading and sampling ------------------------------------------ */

static void test_sampling(void)
{
    enum { N = 5000, SEQ = 32, V = 256 };
    uint16_t *tok = malloc(N * sizeof *tok);
    for (int i = 0; i < N; i++)
        tok[i] = (uint16_t)((i * 7919u + (unsigned)(i / 13)) % V);
    char p[512], err[512] = "";
    path_in(p, sizeof p, "basic.bin");
    check(wf_write_bin(p, tok, N, err, sizeof err) == 0, "wf_write_bin %d tokens (%s)", N, err);

    long len = 0;
    unsigned char *raw = slurp(p, &len);
    int hdr_ok = raw && len == 1024 + 2 * N && raw[0] == (20240520 & 0xff) &&
                 raw[4] == 1 && raw[8] == (N & 0xff) && raw[9] == (N >> 8);
    for (int i = 3; hdr_ok && i < 256; i++)
        hdr_ok = raw[4 * i] == 0 && raw[4 * i + 1] == 0 && raw[4 * i + 2] == 0 &&
                 raw[4 * i + 3] == 0;
    int tok_ok = hdr_ok;
    for (int i = 0; tok_ok && i < N; i++)
        tok_ok = (raw[1024 + 2 * i] | raw[1024 + 2 * i + 1] << 8) == tok[i];
    check(hdr_ok, "file is %ld bytes = 1024 + 2*%d, header magic/version/count, rest zero",
          len, N);
    check(tok_ok, "tokens stored as little-endian uint16");
    free(raw);
    check(count_tmp_files() == 0, "no temporary file left behind");

    wf_data *d = NULL;
    int rc = wf_data_open(&d, p, V, SEQ, err, sizeof err);
    check(rc == 0 && d, "wf_data_open vocab %d seq %d (%s)", V, SEQ, rc ? err : "");
    if (!d) {
        free(tok);
        return;
    }
    check(wf_data_tokens(d) == N, "wf_data_tokens = %ld", wf_data_tokens(d));

    int32_t in[SEQ], tg[SEQ], in2[SEQ], tg2[SEQ];
    int match = 1, shift = 1, inrange = 1, det = 1;
    const uint64_t seed = 1234;
    for (uint64_t g = 0; g < 2000; g++) {
        long s = wf_data_window(d, seed, g);
        if (s < 0 || s > N - SEQ - 1)
            inrange = 0;
        if (wf_data_sample(d, seed, g, in, tg, err, sizeof err) != 0) {
            match = 0;
            break;
        }
        for (int j = 0; j < SEQ; j++) {
            if (s >= 0 && s <= N - SEQ - 1 && (in[j] != tok[s + j] || tg[j] != tok[s + j + 1]))
                match = 0;
            if (j + 1 < SEQ && tg[j] != in[j + 1])
                shift = 0;
        }
        wf_data_sample(d, seed, g, in2, tg2, err, sizeof err);
        if (memcmp(in, in2, sizeof in) || memcmp(tg, tg2, sizeof tg))
            det = 0;
    }
    check(inrange, "2000 windows all start in [0, count - seq - 1]");
    check(match, "inputs are tok[s..s+seq), targets tok[s+1..s+seq+1)");
    check(shift, "targets == inputs shifted by one");
    check(det, "the same (seed, g) gives the same sample twice");

    /* coverage and seed sensitivity */
    static unsigned char seen[N];
    memset(seen, 0, sizeof seen);
    int distinct = 0, differ = 0;
    for (uint64_t g = 0; g < 4000; g++) {
        long s = wf_data_window(d, seed, g);
        if (!seen[s]++)
            distinct++;
        if (wf_data_window(d, seed + 1, g) != s)
            differ++;
    }
    check(distinct > 2000, "4000 samples hit %d distinct windows of %d (spread out)",
          distinct, N - SEQ);
    check(differ > 3900, "seed+1 moves %d of 4000 windows", differ);

    /* layout invariance: any order, any data-parallel split, any handle */
    enum { G = 256 };
    static int32_t ref[G][SEQ], got[G][SEQ];
    for (int g = 0; g < G; g++)
        wf_data_sample(d, seed, (uint64_t)g, ref[g], tg, err, sizeof err);
    for (int g = G - 1; g >= 0; g--)
        wf_data_sample(d, seed, (uint64_t)g, got[g], tg, err, sizeof err);
    check(memcmp(ref, got, sizeof ref) == 0, "reverse drawing order gives the same samples");
    memset(got, 0, sizeof got);
    for (int k = 0; k < G; k++) {
        int g = (int)((k * 97u + 31u) % G); /* 97 is coprime to 256: a shuffle */
        wf_data_sample(d, seed, (uint64_t)g, got[g], tg, err, sizeof err);
    }
    check(memcmp(ref, got, sizeof ref) == 0, "shuffled drawing order gives the same samples");
    int layouts_ok = 1;
    const int dps[] = {1, 2, 4, 8}, micros[] = {8, 4, 2, 1};
    for (int li = 0; li < 4; li++) {
        /* dp ranks, each drawing `micro` sequences per step: rank r, step s,
         * slot m reads global index (s * dp + r) * micro + m */
        int dp = dps[li], micro = micros[li];
        wf_data *d2 = NULL;
        if (wf_data_open(&d2, p, V, SEQ, err, sizeof err) != 0) {
            layouts_ok = 0;
            break;
        }
        memset(got, 0, sizeof got);
        for (int r = dp - 1; r >= 0; r--)
            for (int s = 0; s < G / (dp * micro); s++)
                for (int m = 0; m < micro; m++) {
                    int g = (s * dp + r) * micro + m;
                    wf_data_sample(d2, seed, (uint64_t)g, got[g], tg, err, sizeof err);
                }
        if (memcmp(ref, got, sizeof ref) != 0)
            layouts_ok = 0;
        wf_data_close(d2);
    }
    check(layouts_ok, "dp x micro layouts 1x8, 2x4, 4x2, 8x1 (fresh handles) read the same "
                      "global samples");
    wf_data_close(d);

    /* the smallest file that holds one sample */
    path_in(p, sizeof p, "exact.bin");
    wf_write_bin(p, tok, SEQ + 1, err, sizeof err);
    rc = wf_data_open(&d, p, V, SEQ, err, sizeof err);
    int ok = rc == 0;
    for (uint64_t g = 0; ok && g < 50; g++)
        ok = wf_data_window(d, 99, g) == 0 &&
             wf_data_sample(d, 99, g, in, tg, err, sizeof err) == 0 && in[0] == tok[0] &&
             tg[SEQ - 1] == tok[SEQ];
    check(ok, "a file of exactly seq+1 tokens opens and always samples window 0");
    wf_data_close(d);

    /* vocab 65536: every uint16 is valid */
    uint16_t big[40];
    for (int i = 0; i < 40; i++)
        big[i] = (uint16_t)(65535 - i);
    path_in(p, sizeof p, "big.bin");
    wf_write_bin(p, big, 40, err, sizeof err);
    rc = wf_data_open(&d, p, 65536, 8, err, sizeof err);
    ok = rc == 0 && wf_data_sample(d, 5, 7, in, tg, err, sizeof err) == 0;
    long s = ok ? wf_data_window(d, 5, 7) : 0;
    check(ok && in[0] == 65535 - s && tg[7] == 65535 - (s + 8),
          "vocab 65536 accepts token 65535 (unsigned, not sign-extended)");
    wf_data_close(d);
    free(tok);
}

/* ---- malformed files ---------------------------------------------------- */

static void test_malformed(void)
{
    enum { N = 100 };
    uint16_t tok[N];
    for (int i = 0; i < N; i++)
        tok[i] = (uint16_t)(i % 50);
    char good[512], p[512], err[512] = "";
    path_in(good, sizeof good, "good.bin");
    wf_write_bin(good, tok, N, err, sizeof err);
    long len;
    unsigned char *raw = slurp(good, &len);
    unsigned char *b = malloc((size_t)len + 64);

    memcpy(b, raw, (size_t)len);
    put32(b, 20240521);
    path_in(p, sizeof p, "magic.bin");
    spit(p, b, len);
    expect_open_error("wrong magic", p, 256, 8, "magic", "20240521", "20240520", NULL);

    memcpy(b, raw, (size_t)len);
    put32(b + 4, 7);
    path_in(p, sizeof p, "version.bin");
    spit(p, b, len);
    expect_open_error("wrong version", p, 256, 8, "version", "7", NULL);

    memcpy(b, raw, (size_t)len);
    put32(b + 8, 0);
    path_in(p, sizeof p, "zero.bin");
    spit(p, b, len);
    expect_open_error("token count 0", p, 256, 8, "0 tokens", "> 0", NULL);

    memcpy(b, raw, (size_t)len);
    put32(b + 8, -5);
    path_in(p, sizeof p, "negative.bin");
    spit(p, b, len);
    expect_open_error("negative token count", p, 256, 8, "-5 tokens", NULL);

    path_in(p, sizeof p, "truncated.bin");
    spit(p, raw, len - 1);
    expect_open_error("a file one byte short", p, 256, 8, "truncated", "100 tokens", NULL);

    path_in(p, sizeof p, "truncated2.bin");
    spit(p, raw, 1024 + 2 * 40);
    expect_open_error("a file with 40 of 100 tokens", p, 256, 8, "truncated", NULL);

    memcpy(b, raw, (size_t)len);
    memset(b + len, 0, 6);
    path_in(p, sizeof p, "trailing.bin");
    spit(p, b, len + 6);
    expect_open_error("trailing bytes", p, 256, 8, "6 trailing bytes", NULL);

    path_in(p, sizeof p, "tiny.bin");
    spit(p, raw, 100);
    expect_open_error("a file smaller than the header", p, 256, 8, "too small", "header", NULL);

    path_in(p, sizeof p, "empty.bin");
    spit(p, raw, 0);
    expect_open_error("an empty file", p, 256, 8, "too small", NULL);

    path_in(p, sizeof p, "does-not-exist.bin");
    expect_open_error("a missing file", p, 256, 8, "cannot open", NULL);

    expect_open_error("a directory", dir, 256, 8, "not a regular file", NULL);

    memcpy(b, raw, (size_t)len);
    b[1024 + 2 * 77] = 0x2c; /* token 77 := 300 */
    b[1024 + 2 * 77 + 1] = 0x01;
    path_in(p, sizeof p, "badtoken.bin");
    spit(p, b, len);
    expect_open_error("token 300 at position 77 with vocab 256", p, 256, 8, "token",
                      "position 77", "value 300", "vocab size 256", NULL);
    expect_open_error("token 49 with vocab 49", good, 49, 8, "position 49", "value 49",
                      "vocab size 49", NULL);
    wf_data *d = NULL;
    check(wf_data_open(&d, good, 50, 8, err, sizeof err) == 0,
          "the same file opens with vocab 50 (largest token 49)");
    wf_data_close(d);

    expect_open_error("100 tokens with seq 100", good, 256, 100, "too short", "100 tokens",
                      "seq 100", "101", NULL);
    d = NULL;
    check(wf_data_open(&d, good, 256, 99, err, sizeof err) == 0,
          "100 tokens with seq 99 opens (exactly one window)");
    wf_data_close(d);

    expect_open_error("seq 0", good, 256, 0, "seq 0", NULL);
    expect_open_error("vocab 70000", good, 70000, 8, "vocab 70000", "65536", NULL);
    free(raw);
    free(b);
}

/* ---- atomic writing ------------------------------------------------------ */

static void test_atomic_bin(void)
{
    uint16_t tok[64];
    for (int i = 0; i < 64; i++)
        tok[i] = (uint16_t)i;
    char p[512], bad[600], err[512] = "";
    path_in(p, sizeof p, "keep.bin");
    wf_write_bin(p, tok, 64, err, sizeof err);
    long len0, len1;
    unsigned char *before = slurp(p, &len0);

    int rc = wf_write_bin(p, tok, 0, err, sizeof err);
    unsigned char *after = slurp(p, &len1);
    check(rc == -1 && has_words(err, "0 tokens", NULL) && len0 == len1 &&
              !memcmp(before, after, (size_t)len0),
          "writing 0 tokens fails (\"%s\") and leaves the old file intact", err);
    free(after);

    snprintf(bad, sizeof bad, "%s/no/such/dir/x.bin", dir);
    rc = wf_write_bin(bad, tok, 64, err, sizeof err);
    check(rc == -1 && has_words(err, bad, "cannot create", NULL),
          "writing into a missing directory fails: \"%s\"", err);
    snprintf(bad, sizeof bad, "%s/x.bin", p); /* parent is a regular file */
    rc = wf_write_bin(bad, tok, 64, err, sizeof err);
    check(rc == -1 && strstr(err, bad), "writing below a regular file fails: \"%s\"", err);

    /* A write that runs out of space partway: lower the file size limit. */
    enum { BIG = 200000 };
    uint16_t *big = calloc(BIG, sizeof *big);
    struct rlimit old;
    getrlimit(RLIMIT_FSIZE, &old);
    struct rlimit lim = old;
    lim.rlim_cur = 8192;
    signal(SIGXFSZ, SIG_IGN);
    int set = setrlimit(RLIMIT_FSIZE, &lim) == 0;
    rc = wf_write_bin(p, big, BIG, err, sizeof err);
    setrlimit(RLIMIT_FSIZE, &old);
    after = slurp(p, &len1);
    check(set && rc == -1 && len0 == len1 && !memcmp(before, after, (size_t)len0) &&
              count_tmp_files() == 0,
          "a write failing partway (file size limit) leaves the old file byte-identical "
          "and removes its temporary: \"%s\"",
          err);
    free(after);
    free(big);

    tok[0] = 9;
    rc = wf_write_bin(p, tok, 64, err, sizeof err);
    after = slurp(p, &len1);
    check(rc == 0 && len1 == len0 && after[1024] == 9, "a later write replaces the file");
    free(after);
    free(before);
}

/* ---- synthetic language -------------------------------------------------- */

static uint16_t *read_tokens(const char *path, long *n)
{
    long len;
    unsigned char *raw = slurp(path, &len);
    if (!raw || len < 1024) {
        free(raw);
        return NULL;
    }
    *n = (len - 1024) / 2;
    uint16_t *t = malloc((size_t)*n * sizeof *t + 1);
    for (long i = 0; i < *n; i++)
        t[i] = (uint16_t)(raw[1024 + 2 * i] | raw[1024 + 2 * i + 1] << 8);
    free(raw);
    return t;
}

static void synth_case(int vocab, int branch, long n, uint64_t seed, double tol)
{
    char p[512], err[512] = "";
    snprintf(p, sizeof p, "%s/synth_%d_%d.bin", dir, vocab, branch);
    double floor_nats = -1;
    int rc = wf_data_synth(p, n, vocab, branch, seed, &floor_nats, err, sizeof err);
    check(rc == 0 && fabs(floor_nats - log((double)branch)) < 1e-12,
          "synth vocab %d branch %d: %ld tokens, entropy floor %.6f = ln(%d) (%s)", vocab,
          branch, n, floor_nats, branch, rc ? err : "");
    if (rc)
        return;
    long m = 0;
    uint16_t *t = read_tokens(p, &m);
    wf_data *d = NULL;
    rc = wf_data_open(&d, p, vocab, 16, err, sizeof err);
    check(rc == 0 && t && m == n, "  it opens with vocab %d and holds %ld tokens", vocab, m);
    wf_data_close(d);
    if (!t || m != n) {
        free(t);
        return;
    }
    long *cnt = calloc((size_t)vocab * (size_t)vocab, sizeof *cnt);
    long *ctx = calloc((size_t)vocab, sizeof *ctx);
    for (long i = 0; i + 1 < n; i++) {
        cnt[(size_t)t[i] * (size_t)vocab + t[i + 1]]++;
        ctx[t[i]]++;
    }
    double h = 0;
    int all_branch = 1, next_ok = 1, allowed = 1, all_seen = 1, bad_t = -1, bad_k = 0;
    for (int a = 0; a < vocab; a++) {
        if (ctx[a] == 0)
            all_seen = 0;
        int k = 0;
        for (int b = 0; b < vocab; b++) {
            long c = cnt[(size_t)a * (size_t)vocab + b];
            if (!c)
                continue;
            k++;
            h -= (double)c / (double)(n - 1) * log((double)c / (double)ctx[a]);
        }
        if (k != branch && all_branch) {
            all_branch = 0;
            bad_t = a;
            bad_k = k;
        }
        if (!cnt[(size_t)a * (size_t)vocab + (size_t)((a + 1) % vocab)])
            next_ok = 0;
        for (int j = 0; j < branch; j++) {
            int s = wf_synth_successor(vocab, seed, a, j);
            if (s < 0 || s >= vocab || !cnt[(size_t)a * (size_t)vocab + (size_t)s])
                allowed = 0;
        }
    }
    check(all_seen, "  every one of the %d tokens occurs", vocab);
    if (all_branch)
        check(1, "  every token has exactly %d distinct observed successors", branch);
    else
        check(0, "  every token has exactly %d distinct observed successors (token %d has %d)",
              branch, bad_t, bad_k);
    check(next_ok, "  every token t is followed by (t+1) mod vocab somewhere");
    check(allowed, "  the observed successors are exactly wf_synth_successor(t, 0..branch-1)");
    check(fabs(h - floor_nats) < tol,
          "  empirical conditional entropy %.5f nats vs ln(%d) = %.5f (|diff| < %g)", h,
          branch, floor_nats, tol);
    free(cnt);
    free(ctx);
    free(t);
}

static void test_synth(void)
{
    synth_case(64, 4, 400000, 42, 0.01);
    synth_case(50, 7, 600000, 7, 0.02);
    synth_case(16, 16, 200000, 3, 0.01);
    synth_case(2, 2, 10000, 11, 0.02);
    synth_case(300, 1, 1000, 5, 1e-12);

    /* successor sets are distinct for awkward vocab sizes, including the
     * full permutation when branch == vocab */
    const int vocabs[] = {2, 3, 5, 255, 257, 1000, 4097, 65536};
    int distinct = 1;
    unsigned char *mark = malloc(65536);
    for (int vi = 0; vi < 8; vi++) {
        int v = vocabs[vi];
        for (int t = 0; t < v && t < 3; t++) {
            memset(mark, 0, 65536);
            for (int k = 0; k < v; k++) {
                int s = wf_synth_successor(v, 99, t, k);
                if (s < 0 || s >= v || mark[s]++)
                    distinct = 0;
            }
            if (wf_synth_successor(v, 99, t, 0) != (t + 1) % v)
                distinct = 0;
        }
    }
    free(mark);
    check(distinct, "successor k = 0..vocab-1 of t is a permutation of the vocab, "
                    "successor 0 = t+1 (vocab 2, 3, 5, 255, 257, 1000, 4097, 65536)");

    char p1[512], p2[512], p3[512], err[512] = "";
    path_in(p1, sizeof p1, "s1.bin");
    path_in(p2, sizeof p2, "s2.bin");
    path_in(p3, sizeof p3, "s3.bin");
    wf_data_synth(p1, 5000, 100, 3, 77, NULL, err, sizeof err);
    wf_data_synth(p2, 5000, 100, 3, 77, NULL, err, sizeof err);
    wf_data_synth(p3, 5000, 100, 3, 78, NULL, err, sizeof err);
    long l1, l2, l3;
    unsigned char *b1 = slurp(p1, &l1), *b2 = slurp(p2, &l2), *b3 = slurp(p3, &l3);
    check(b1 && b2 && l1 == l2 && !memcmp(b1, b2, (size_t)l1),
          "the same seed gives a byte-identical file");
    check(b1 && b3 && l1 == l3 && memcmp(b1, b3, (size_t)l1),
          "a different seed gives a different file");
    free(b1);
    free(b2);
    free(b3);

    int rc = wf_data_synth(p1, 100, 1, 1, 0, NULL, err, sizeof err);
    check(rc == -1 && has_words(err, "vocab 1", "2..65536", NULL), "vocab 1: \"%s\"", err);
    rc = wf_data_synth(p1, 100, 65537, 2, 0, NULL, err, sizeof err);
    check(rc == -1 && has_words(err, "vocab 65537", NULL), "vocab 65537: \"%s\"", err);
    rc = wf_data_synth(p1, 100, 10, 0, 0, NULL, err, sizeof err);
    check(rc == -1 && has_words(err, "branch 0", "1..10", NULL), "branch 0: \"%s\"", err);
    rc = wf_data_synth(p1, 100, 10, 11, 0, NULL, err, sizeof err);
    check(rc == -1 && has_words(err, "branch 11", NULL), "branch 11 > vocab 10: \"%s\"", err);
    rc = wf_data_synth(p1, 1, 10, 2, 0, NULL, err, sizeof err);
    check(rc == -1 && has_words(err, "n_tokens 1", NULL), "n_tokens 1: \"%s\"", err);
}

/* ---- text ---------------------------------------------------------------- */

static void test_text(void)
{
    char in[512], out[512], err[512] = "";
    path_in(in, sizeof in, "input.txt");
    path_in(out, sizeof out, "text.bin");
    static const char prose[] = "First Citizen:\nBefore we proceed any further, hear "
                                "me.\n\x00\xff!";
    unsigned char text[256 + sizeof prose];
    for (int i = 0; i < 256; i++)
        text[i] = (unsigned char)(255 - i);
    memcpy(text + 256, prose, sizeof prose);
    spit(in, text, sizeof text);
    long n = -1;
    int rc = wf_data_text(in, out, &n, err, sizeof err);
    check(rc == 0 && n == (long)sizeof text, "text mode: %ld bytes -> %ld tokens (%s)",
          (long)sizeof text, n, rc ? err : "");
    long m = 0;
    uint16_t *t = read_tokens(out, &m);
    int same = t && m == (long)sizeof text;
    for (long i = 0; same && i < m; i++)
        same = t[i] == text[i];
    check(same, "text mode round trip: token i == byte i, all 256 byte values");
    free(t);

    wf_data *d = NULL;
    rc = wf_data_open(&d, out, 256, 16, err, sizeof err);
    int32_t xi[16], yi[16];
    int ok = rc == 0;
    for (uint64_t g = 0; ok && g < 100; g++) {
        long s = wf_data_window(d, 3, g);
        ok = wf_data_sample(d, 3, g, xi, yi, err, sizeof err) == 0 && xi[0] == text[s] &&
             yi[15] == text[s + 16];
    }
    check(ok, "text .bin samples with vocab 256 match the text");
    wf_data_close(d);

    path_in(in, sizeof in, "empty.txt");
    spit(in, "", 0);
    rc = wf_data_text(in, out, &n, err, sizeof err);
    check(rc == -1 && has_words(err, in, "empty", NULL), "empty text: \"%s\"", err);
    path_in(in, sizeof in, "missing.txt");
    rc = wf_data_text(in, out, &n, err, sizeof err);
    check(rc == -1 && has_words(err, in, "cannot open", NULL), "missing text: \"%s\"", err);
}

int main(void)
{
    if (make_dir("weft_test_data") != 0)
        return 2;
    printf("test_data: working in %s\n", dir);
    test_sampling();
    test_malformed();
    test_atomic_bin();
    test_synth();
    test_text();
    test_not_regular();
    remove_dir();
    printf("test_data: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
