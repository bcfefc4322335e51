/* data.c: reading llm.c / nanoGPT .bin token files (see data.h). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "data.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "err_text.h"

/* The file is read with pread, not mapped: a file truncated or replaced
 * while training then gives a short read and a message naming it, where a
 * mapping would end the process in SIGBUS. */
struct wf_data {
    char *path;                 /* for error messages */
    int fd;
    long long size;             /* bytes at open */
    unsigned char *window;      /* (seq + 1) little-endian uint16 tokens of one sample */
    long n;                     /* number of tokens */
    int vocab;
    int seq;
};

static int32_t rd_le32(const unsigned char *p)
{
    uint32_t v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                 (uint32_t)p[3] << 24;
    return (int32_t)v;
}

static unsigned rd_tok(const unsigned char *tok, long i)
{
    const unsigned char *p = tok + 2 * (size_t)i;
    return (unsigned)p[0] | (unsigned)p[1] << 8;
}

/* Reads len bytes at off; 0 when all arrived.  A short read means the file
 * shrank since it was opened: the message says so, with its size now. */
static int read_at(const wf_data *d, void *buf, size_t len, long long off, char *err, size_t errlen)
{
    size_t got = 0;
    while (got < len) {
        ssize_t k = pread(d->fd, (unsigned char *)buf + got, len - got, (off_t)(off + (long long)got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            set_err(err, errlen, "data file %s: cannot read %zu bytes at offset %lld: %s", d->path,
                    len, off, strerror(errno));
            return -1;
        }
        if (k == 0) {
            struct stat st;
            long long now = fstat(d->fd, &st) == 0 ? (long long)st.st_size : -1;
            set_err(err, errlen,
                    "data file %s: truncated while in use: it had %lld bytes when opened, has %lld "
                    "now, and bytes %lld..%lld are gone",
                    d->path, d->size, now, off + (long long)got, off + (long long)len);
            return -1;
        }
        got += (size_t)k;
    }
    return 0;
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *r = malloc(n);
    if (r)
        memcpy(r, s, n);
    return r;
}

int wf_data_open(wf_data **out, const char *path, int vocab, int seq,
                 char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!out || !path || !*path) {
        set_err(err, errlen, "data: no token file path given (expected a .bin token file)");
        return -1;
    }
    if (vocab < 1 || vocab > 65536) {
        set_err(err, errlen,
                "data file %s: vocab %d is out of range (uint16 tokens allow 1..65536)",
                path, vocab);
        return -1;
    }
    if (seq < 1) {
        set_err(err, errlen, "data file %s: seq %d is invalid (must be >= 1)", path, seq);
        return -1;
    }

    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused
     * below like any file that is not a regular one */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) {
        set_err(err, errlen, "data file %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        set_err(err, errlen, "data file %s: cannot stat: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(err, errlen, "data file %s: not a regular file (it is %s; expected a .bin token file)",
                path, S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a directory"
                : S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : S_ISSOCK(st.st_mode)
                ? "a socket" : "not a plain file");
        close(fd);
        return -1;
    }
    long long size = (long long)st.st_size;
    if (size < WF_DATA_HEADER_BYTES) {
        set_err(err, errlen,
                "data file %s: only %lld bytes, too small for the %d-byte header "
                "(256 int32: magic %d, version %d, token count)",
                path, size, WF_DATA_HEADER_BYTES, WF_DATA_MAGIC, WF_DATA_VERSION);
        close(fd);
        return -1;
    }
    wf_data *d = calloc(1, sizeof *d);
    char *pcopy = dup_str(path);
    unsigned char *window = malloc(2 * ((size_t)seq + 1));
    if (!d || !pcopy || !window) {
        set_err(err, errlen, "data file %s: out of memory", path);
        free(d);
        free(pcopy);
        free(window);
        close(fd);
        return -1;
    }
    d->path = pcopy;
    d->fd = fd;
    d->size = size;
    d->window = window;
    d->vocab = vocab;
    d->seq = seq;

    unsigned char header[WF_DATA_HEADER_BYTES];
    if (read_at(d, header, sizeof header, 0, err, errlen) != 0) {
        wf_data_close(d);
        return -1;
    }
    int fail = 0; /* 1 once an error message is written */
    int32_t magic = rd_le32(header), version = rd_le32(header + 4), count = rd_le32(header + 8);
    if (magic != WF_DATA_MAGIC) {
        set_err(err, errlen,
                "data file %s: wrong magic number %ld in the header (expected %d: "
                "not an llm.c/nanoGPT .bin token file)",
                path, (long)magic, WF_DATA_MAGIC);
        fail = 1;
    } else if (version != WF_DATA_VERSION) {
        set_err(err, errlen,
                "data file %s: unsupported version %ld in the header (expected version %d)",
                path, (long)version, WF_DATA_VERSION);
        fail = 1;
    } else if (count <= 0) {
        set_err(err, errlen,
                "data file %s: header declares %ld tokens (the token count must be > 0)",
                path, (long)count);
        fail = 1;
    } else {
        long long want = WF_DATA_HEADER_BYTES + 2LL * count;
        if (size < want) {
            set_err(err, errlen,
                    "data file %s: truncated: the header declares %ld tokens "
                    "(%lld bytes expected) but the file has %lld bytes",
                    path, (long)count, want, size);
            fail = 1;
        } else if (size > want) {
            set_err(err, errlen,
                    "data file %s: %lld trailing bytes after the %ld tokens the header "
                    "declares (file has %lld bytes, expected exactly %lld)",
                    path, size - want, (long)count, size, want);
            fail = 1;
        } else if ((long long)count < (long long)seq + 1) {
            set_err(err, errlen,
                    "data file %s: too short: %ld tokens, but seq %d needs at least %lld "
                    "tokens for one sample (seq inputs + 1 target)",
                    path, (long)count, seq, (long long)seq + 1);
            fail = 1;
        }
    }
    if (fail) {
        wf_data_close(d);
        return -1;
    }
    d->n = count;

    /* One pass over all tokens: every rank fails up front on a bad file. */
    if (vocab < 65536) {
        enum { CHUNK = 1 << 16 }; /* tokens per read */
        unsigned char *buf = malloc(2 * (size_t)CHUNK);
        if (!buf) {
            set_err(err, errlen, "data file %s: out of memory", path);
            wf_data_close(d);
            return -1;
        }
        for (long at = 0; at < d->n; at += CHUNK) {
            long k = d->n - at < CHUNK ? d->n - at : CHUNK;
            if (read_at(d, buf, 2 * (size_t)k, WF_DATA_HEADER_BYTES + 2LL * at, err, errlen) != 0) {
                free(buf);
                wf_data_close(d);
                return -1;
            }
            for (long i = 0; i < k; i++) {
                unsigned t = rd_tok(buf, i);
                if (t >= (unsigned)vocab) {
                    set_err(err, errlen,
                            "data file %s: token at position %ld has value %u, which is >= "
                            "the vocab size %d (valid tokens are 0..%d)",
                            path, at + i, t, vocab, vocab - 1);
                    free(buf);
                    wf_data_close(d);
                    return -1;
                }
            }
        }
        free(buf);
    }
    *out = d;
    return 0;
}

long wf_data_tokens(const wf_data *d)
{
    return d ? d->n : 0;
}

int wf_data_seq(const wf_data *d)
{
    return d ? d->seq : 0;
}

/* splitmix64 finalizer: a bijective 64-bit mix. */
static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

long wf_data_window(const wf_data *d, uint64_t seed, uint64_t g)
{
    if (!d)
        return 0;
    /* hash(seed, g): the seed is mixed first so that nearby seeds and nearby
     * sample indices both give unrelated windows. */
    uint64_t h = mix64(seed + 0x9E3779B97F4A7C15ULL);
    h = mix64(h ^ (g * 0x9E3779B97F4A7C15ULL + 0xD1B54A32D192ED03ULL));
    uint64_t span = (uint64_t)(d->n - d->seq); /* >= 1, checked at open */
    return (long)(h % span);
}

int wf_data_sample(const wf_data *d, uint64_t seed, uint64_t g,
                   int32_t *inputs, int32_t *targets, char *err, size_t errlen)
{
    if (!d || !inputs || !targets) {
        set_err(err, errlen, "data: wf_data_sample called with a NULL %s",
                !d ? "data handle" : "output buffer");
        return -1;
    }
    long s = wf_data_window(d, seed, g);
    if (read_at(d, d->window, 2 * ((size_t)d->seq + 1), WF_DATA_HEADER_BYTES + 2LL * s, err,
                errlen) != 0)
        return -1;
    for (long i = 0; i <= d->seq; i++) {
        unsigned t = rd_tok(d->window, i);
        if (t >= (unsigned)d->vocab) {
            set_err(err, errlen,
                    "data file %s: token at position %ld has value %u, which is >= "
                    "the vocab size %d (valid tokens are 0..%d)",
                    d->path, s + i, t, d->vocab, d->vocab - 1);
            return -1;
        }
        if (i < d->seq)
            inputs[i] = (int32_t)t;
        if (i > 0)
            targets[i - 1] = (int32_t)t;
    }
    return 0;
}

void wf_data_close(wf_data *d)
{
    if (!d)
        return;
    if (d->fd >= 0)
        close(d->fd);
    free(d->window);
    free(d->path);
    free(d);
}
