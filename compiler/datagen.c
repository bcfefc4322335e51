/* datagen.c: atomic writers for .bin token files (see datagen.h). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "datagen.h"
#include "output.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "err_text.h"

#define BIN_MAGIC 20240520
#define BIN_VERSION 1
#define BIN_HEADER_INTS 256
#define BIN_MAX_TOKENS 2147483647L /* the header count is an int32 */
#define CHUNK_TOKENS 65536

static void put_le32(unsigned char *p, uint32_t v)
{
    p[0] = (unsigned char)v;
    p[1] = (unsigned char)(v >> 8);
    p[2] = (unsigned char)(v >> 16);
    p[3] = (unsigned char)(v >> 24);
}

/* Produces the next count tokens of a stream. */
typedef void (*fill_fn)(void *ctx, uint16_t *buf, long count);

/* The one atomic writer: header, then n tokens produced chunk by chunk. */
static int write_bin_stream(const char *path, long n, fill_fn fill, void *ctx,
                            char *err, size_t errlen)
{
    if (!path || !*path) {
        set_err(err, errlen, "write .bin: no output path given");
        return -1;
    }
    if (n < 1 || n > BIN_MAX_TOKENS) {
        set_err(err, errlen,
                "write .bin %s: %ld tokens is out of range (the format holds 1..%ld tokens)",
                path, n, BIN_MAX_TOKENS);
        return -1;
    }
    uint16_t *toks = malloc(CHUNK_TOKENS * sizeof *toks);
    unsigned char *bytes = malloc(CHUNK_TOKENS * 2 > BIN_HEADER_INTS * 4
                                      ? CHUNK_TOKENS * 2 : BIN_HEADER_INTS * 4);
    if (!toks || !bytes) {
        set_err(err, errlen, "write .bin %s: out of memory", path);
        free(toks);
        free(bytes);
        return -1;
    }

    /* a temporary sibling, renamed over path once complete (output.h) */
    int rc = -1;
    wf_outfile out;
    char why[PATH_MAX + 200];
    if (wf_outfile_open(&out, path, 0666, why, sizeof why) != 0) {
        set_err(err, errlen, "write .bin: %s", why);
        goto done;
    }
    memset(bytes, 0, BIN_HEADER_INTS * 4);
    put_le32(bytes, BIN_MAGIC);
    put_le32(bytes + 4, BIN_VERSION);
    put_le32(bytes + 8, (uint32_t)n);
    if (fwrite(bytes, 1, BIN_HEADER_INTS * 4, out.f) != BIN_HEADER_INTS * 4)
        goto write_failed;
    for (long done = 0; done < n;) {
        long c = n - done < CHUNK_TOKENS ? n - done : CHUNK_TOKENS;
        fill(ctx, toks, c);
        for (long i = 0; i < c; i++) {
            bytes[2 * i] = (unsigned char)toks[i];
            bytes[2 * i + 1] = (unsigned char)(toks[i] >> 8);
        }
        if (fwrite(bytes, 1, (size_t)(2 * c), out.f) != (size_t)(2 * c))
            goto write_failed;
        done += c;
    }
    if (wf_outfile_commit(&out, why, sizeof why) != 0) {
        set_err(err, errlen, "write .bin %s: %s (any existing %s is unchanged)", path, why, path);
        goto done;
    }
    rc = 0;
    goto done;

write_failed:
    set_err(err, errlen, "write .bin %s: writing temporary file %s failed: %s "
            "(any existing %s is unchanged)", path, out.tmp, strerror(errno), path);
    wf_outfile_abort(&out);
done:
    free(toks);
    free(bytes);
    return rc;
}

/* ---- from an array ------------------------------------------------------ */

struct array_src {
    const uint16_t *tok;
    long pos;
};

static void fill_array(void *ctx, uint16_t *buf, long count)
{
    struct array_src *s = ctx;
    memcpy(buf, s->tok + s->pos, (size_t)count * sizeof *buf);
    s->pos += count;
}

int wf_write_bin(const char *path, const uint16_t *tok, long n,
                 char *err, size_t errlen)
{
    if (!tok) {
        set_err(err, errlen, "write .bin %s: NULL token array",
                path ? path : "(no path)");
        return -1;
    }
    struct array_src s = {tok, 0};
    return write_bin_stream(path, n, fill_array, &s, err, errlen);
}

/* ---- byte-level text ---------------------------------------------------- */

struct bytes_src {
    const unsigned char *b;
    long pos;
};

static void fill_bytes(void *ctx, uint16_t *buf, long count)
{
    struct bytes_src *s = ctx;
    for (long i = 0; i < count; i++)
        buf[i] = s->b[s->pos + i];
    s->pos += count;
}

int wf_data_text(const char *in_path, const char *out_path, long *n_out,
                 char *err, size_t errlen)
{
    if (n_out)
        *n_out = 0;
    if (!in_path || !*in_path) {
        set_err(err, errlen, "text data: no input text file given");
        return -1;
    }
    FILE *f = fopen(in_path, "rb");
    if (!f) {
        set_err(err, errlen, "text data %s: cannot open: %s", in_path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, len = 0;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        set_err(err, errlen, "text data %s: out of memory", in_path);
        fclose(f);
        return -1;
    }
    for (;;) {
        if (len == cap) {
            if (cap > (size_t)BIN_MAX_TOKENS) {
                set_err(err, errlen,
                        "text data %s: more than %ld bytes (the .bin format holds at "
                        "most %ld tokens)",
                        in_path, BIN_MAX_TOKENS, BIN_MAX_TOKENS);
                free(buf);
                fclose(f);
                return -1;
            }
            unsigned char *nb = realloc(buf, cap * 2);
            if (!nb) {
                set_err(err, errlen, "text data %s: out of memory", in_path);
                free(buf);
                fclose(f);
                return -1;
            }
            buf = nb;
            cap *= 2;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int read_failed = ferror(f);
    fclose(f);
    if (read_failed) {
        set_err(err, errlen, "text data %s: read error", in_path);
        free(buf);
        return -1;
    }
    if (len == 0) {
        set_err(err, errlen, "text data %s: the file is empty (need at least one byte)",
                in_path);
        free(buf);
        return -1;
    }
    if (len > (size_t)BIN_MAX_TOKENS) {
        set_err(err, errlen,
                "text data %s: %zu bytes, more than the %ld tokens a .bin file holds",
                in_path, len, BIN_MAX_TOKENS);
        free(buf);
        return -1;
    }
    struct bytes_src s = {buf, 0};
    int rc = write_bin_stream(out_path, (long)len, fill_bytes, &s, err, errlen);
    free(buf);
    if (rc == 0 && n_out)
        *n_out = (long)len;
    return rc;
}

/* ---- synthetic Markov language ----------------------------------------- */

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

#define GOLDEN 0x9E3779B97F4A7C15ULL

/* A keyed permutation of [0, m), m <= 65536: a 4-round balanced Feistel
 * network on the smallest even number of bits covering m, with cycle walking
 * to stay inside [0, m). */
static uint32_t small_prp(uint64_t key, uint32_t m, uint32_t x)
{
    if (m <= 1)
        return 0;
    int bits = 0;
    while ((1u << bits) < m)
        bits++;
    if (bits & 1)
        bits++;
    if (bits < 2)
        bits = 2;
    int half = bits / 2;
    uint32_t mask = (1u << half) - 1;
    do {
        uint32_t l = x >> half, r = x & mask;
        for (uint64_t round = 0; round < 4; round++) {
            uint32_t fr = (uint32_t)mix64(key ^ (round * GOLDEN) ^ ((uint64_t)r << 40)) & mask;
            uint32_t nl = r;
            r = l ^ fr;
            l = nl;
        }
        x = (l << half) | r;
    } while (x >= m);
    return x;
}

static uint64_t chain_key(uint64_t seed, int t)
{
    return mix64(mix64(seed ^ 0x5EEDC4A1D0A7A5E7ULL) + (uint64_t)(t + 1) * GOLDEN);
}

int wf_synth_successor(int vocab, uint64_t seed, int t, int k)
{
    /* offsets from t+1: 0 for k = 0, distinct values in [1, vocab) otherwise */
    uint32_t off = 0;
    if (k > 0)
        off = 1 + small_prp(chain_key(seed, t), (uint32_t)(vocab - 1), (uint32_t)(k - 1));
    return (int)(((uint32_t)t + 1u + off) % (uint32_t)vocab);
}

struct synth_src {
    int vocab, branch;
    uint64_t seed;
    uint64_t rng;   /* splitmix64 state of the walk */
    int cur;        /* last token emitted, -1 before the first */
};

static uint64_t rng_next(uint64_t *s)
{
    *s += GOLDEN;
    return mix64(*s);
}

/* Exactly uniform in [0, n), n >= 1 (rejection of the biased low range). */
static uint32_t rng_below(uint64_t *s, uint32_t n)
{
    uint64_t lim = (0 - (uint64_t)n) % n;
    for (;;) {
        uint64_t r = rng_next(s);
        if (r >= lim)
            return (uint32_t)(r % n);
    }
}

static void fill_synth(void *ctx, uint16_t *buf, long count)
{
    struct synth_src *s = ctx;
    for (long i = 0; i < count; i++) {
        if (s->cur < 0)
            s->cur = (int)rng_below(&s->rng, (uint32_t)s->vocab);
        else
            s->cur = wf_synth_successor(s->vocab, s->seed, s->cur,
                                        (int)rng_below(&s->rng, (uint32_t)s->branch));
        buf[i] = (uint16_t)s->cur;
    }
}

int wf_data_synth(const char *out_path, long n_tokens, int vocab, int branch,
                  uint64_t seed, double *entropy_floor_nats,
                  char *err, size_t errlen)
{
    const char *p = out_path ? out_path : "(no path)";
    if (vocab < 2 || vocab > 65536) {
        set_err(err, errlen,
                "synthetic data %s: vocab %d is out of range (valid: 2..65536)", p, vocab);
        return -1;
    }
    if (branch < 1 || branch > vocab) {
        set_err(err, errlen,
                "synthetic data %s: branch %d is out of range (valid: 1..vocab = 1..%d)",
                p, branch, vocab);
        return -1;
    }
    if (n_tokens < 2 || n_tokens > BIN_MAX_TOKENS) {
        set_err(err, errlen,
                "synthetic data %s: n_tokens %ld is out of range (valid: 2..%ld)",
                p, n_tokens, BIN_MAX_TOKENS);
        return -1;
    }
    struct synth_src s = {vocab, branch, seed, mix64(seed ^ 0x7A11C0DE5EED0001ULL), -1};
    if (write_bin_stream(out_path, n_tokens, fill_synth, &s, err, errlen) != 0)
        return -1;
    if (entropy_floor_nats)
        *entropy_floor_nats = log((double)branch);
    return 0;
}
