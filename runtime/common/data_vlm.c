/* data_vlm.c: reading WVLM multimodal record files (see data_vlm.h). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "data_vlm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "err_text.h"

struct wf_vlm {
    char *path;
    const unsigned char *map;
    size_t map_len;
    int32_t hdr[WF_VLM_HEADER_INTS];
    long n, rec_bytes, img_bytes;
    int seq;
    double floor_text, floor_image;
};

static int32_t rd32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

static double rd_f64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    double d;
    memcpy(&d, &v, sizeof d);
    return d;
}

static const char *const field_name[] = {
    "magic", "version", "image height", "image width", "channels", "seq",
    "record count", "vocab", "image token", "image positions", "pad token", "patch",
    "image start", "descriptive tokens", "record bytes",
};

/* Header checks that need no plan: sizes positive and consistent. */
static int check_header(const char *path, const int32_t *h, long long size,
                        char *err, size_t errlen)
{
    if (h[WF_VLM_H_MAGIC] != WF_VLM_MAGIC) {
        set_err(err, errlen, "vlm data file %s: wrong magic number 0x%08x in the header "
                "(expected 0x%08x, \"WVLM\": not a file `weft data vlm` wrote)",
                path, (unsigned)h[WF_VLM_H_MAGIC], (unsigned)WF_VLM_MAGIC);
        return -1;
    }
    if (h[WF_VLM_H_VERSION] != WF_VLM_VERSION) {
        set_err(err, errlen, "vlm data file %s: unsupported version %d (expected %d)",
                path, h[WF_VLM_H_VERSION], WF_VLM_VERSION);
        return -1;
    }
    for (int f = WF_VLM_H_HEIGHT; f <= WF_VLM_H_VOCAB; f++)
        if (h[f] < 1) {
            set_err(err, errlen, "vlm data file %s: header field '%s' is %d (must be >= 1)",
                    path, field_name[f], h[f]);
            return -1;
        }
    int seq = h[WF_VLM_H_SEQ], P = h[WF_VLM_H_IMAGE_POSITIONS], st = h[WF_VLM_H_IMAGE_START];
    if (h[WF_VLM_H_VOCAB] > 65536 || h[WF_VLM_H_IMAGE_TOKEN] < 0 ||
        h[WF_VLM_H_IMAGE_TOKEN] >= h[WF_VLM_H_VOCAB] || h[WF_VLM_H_PAD_TOKEN] < 0 ||
        h[WF_VLM_H_PAD_TOKEN] >= h[WF_VLM_H_VOCAB]) {
        set_err(err, errlen, "vlm data file %s: header vocab %d, image token %d, pad token %d "
                "are inconsistent (vocab <= 65536, both ids below it)", path,
                h[WF_VLM_H_VOCAB], h[WF_VLM_H_IMAGE_TOKEN], h[WF_VLM_H_PAD_TOKEN]);
        return -1;
    }
    if (P < 1 || st < 0 || (long)st + P > (long)seq + 1) {
        set_err(err, errlen, "vlm data file %s: header field 'image positions' %d at "
                "'image start' %d does not fit the %d tokens of a record", path, P, st, seq + 1);
        return -1;
    }
    long long rec = wf_vlm_record_bytes(h[WF_VLM_H_HEIGHT], h[WF_VLM_H_WIDTH],
                                        h[WF_VLM_H_CHANNELS], seq);
    if (h[WF_VLM_H_RECORD_BYTES] != rec) {
        set_err(err, errlen, "vlm data file %s: header field 'record bytes' is %d, but "
                "H*W*C + 3*(seq+1) = %lld", path, h[WF_VLM_H_RECORD_BYTES], rec);
        return -1;
    }
    long long want = WF_VLM_HEADER_BYTES + rec * h[WF_VLM_H_COUNT];
    if (size != want) {
        set_err(err, errlen, "vlm data file %s: %s: %lld bytes, but the header declares %d "
                "records of %lld bytes (%lld bytes in all)", path,
                size < want ? "truncated" : "trailing bytes", size, h[WF_VLM_H_COUNT], rec, want);
        return -1;
    }
    return 0;
}

/* Every record's tokens and mask: a bad file fails at open, on every rank. */
static int check_records(const wf_vlm *d, char *err, size_t errlen)
{
    const int32_t *h = d->hdr;
    int P = h[WF_VLM_H_IMAGE_POSITIONS], st = h[WF_VLM_H_IMAGE_START];
    unsigned vocab = (unsigned)h[WF_VLM_H_VOCAB], img = (unsigned)h[WF_VLM_H_IMAGE_TOKEN];
    for (long r = 0; r < d->n; r++) {
        const unsigned char *t = d->map + WF_VLM_HEADER_BYTES + r * d->rec_bytes + d->img_bytes;
        const unsigned char *m = t + 2 * (d->seq + 1);
        for (int i = 0; i <= d->seq; i++) {
            unsigned v = (unsigned)t[2 * i] | (unsigned)t[2 * i + 1] << 8;
            int placeholder = i >= st && i < st + P;
            const char *why = v >= vocab ? "is >= the vocab"
                : placeholder && v != img ? "should be the image token"
                : !placeholder && v == img ? "is the image token outside the placeholders"
                : m[i] > WF_VLM_MASK_DESCRIPTIVE ? "has a mask value above 2"
                : placeholder && m[i] ? "is a placeholder with a nonzero mask" : NULL;
            if (why) {
                set_err(err, errlen, "vlm data file %s: record %ld, token %d (value %u, "
                        "mask %u) %s (vocab %u, image token %u at positions %d..%d)",
                        d->path, r, i, v, m[i], why, vocab, img, st, st + P - 1);
                return -1;
            }
        }
    }
    return 0;
}

int wf_vlm_open(wf_vlm **out, const char *path, const wf_vlm_shape *want,
                char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!out || !path || !*path || !want) {
        set_err(err, errlen, "vlm data: no file path or expected shape given");
        return -1;
    }
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        set_err(err, errlen, "vlm data file %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "vlm data file %s: not a regular file (expected a WVLM file "
                "from `weft data vlm`)", path);
        close(fd);
        return -1;
    }
    long long size = (long long)st.st_size;
    if (size < WF_VLM_HEADER_BYTES) {
        set_err(err, errlen, "vlm data file %s: only %lld bytes, too small for the %d-byte "
                "header", path, size, WF_VLM_HEADER_BYTES);
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (m == MAP_FAILED) {
        set_err(err, errlen, "vlm data file %s: cannot map %lld bytes: %s", path, size,
                strerror(map_errno));
        return -1;
    }
    wf_vlm *d = calloc(1, sizeof *d);
    size_t plen = strlen(path) + 1;
    char *pcopy = malloc(plen);
    if (!d || !pcopy) {
        set_err(err, errlen, "vlm data file %s: out of memory", path);
        free(d);
        free(pcopy);
        munmap(m, (size_t)size);
        return -1;
    }
    memcpy(pcopy, path, plen);
    d->path = pcopy;
    d->map = m;
    d->map_len = (size_t)size;
    for (int i = 0; i < WF_VLM_HEADER_INTS; i++)
        d->hdr[i] = rd32(d->map + 4 * i);
    if (check_header(path, d->hdr, size, err, errlen) != 0)
        goto fail;

    /* the plan's shapes, field by field */
    const struct { int field, want; } expect[] = {
        { WF_VLM_H_HEIGHT, want->height }, { WF_VLM_H_WIDTH, want->width },
        { WF_VLM_H_CHANNELS, want->channels }, { WF_VLM_H_SEQ, want->seq },
        { WF_VLM_H_VOCAB, want->vocab }, { WF_VLM_H_IMAGE_TOKEN, want->image_token },
        { WF_VLM_H_IMAGE_POSITIONS, want->image_positions },
    };
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++)
        if (d->hdr[expect[i].field] != expect[i].want) {
            set_err(err, errlen, "vlm data file %s: header field '%s' is %d, but the plan "
                    "expects %d (remake the file with `weft data vlm` for this model)",
                    path, field_name[expect[i].field], d->hdr[expect[i].field], expect[i].want);
            goto fail;
        }
    d->n = d->hdr[WF_VLM_H_COUNT];
    d->seq = d->hdr[WF_VLM_H_SEQ];
    d->rec_bytes = d->hdr[WF_VLM_H_RECORD_BYTES];
    d->img_bytes = (long)d->hdr[WF_VLM_H_HEIGHT] * d->hdr[WF_VLM_H_WIDTH] *
                   d->hdr[WF_VLM_H_CHANNELS];
    d->floor_text = rd_f64(d->map + 4 * WF_VLM_H_FLOOR_TEXT);
    d->floor_image = rd_f64(d->map + 4 * WF_VLM_H_FLOOR_IMAGE);
    if (check_records(d, err, errlen) != 0)
        goto fail;
    *out = d;
    return 0;
fail:
    wf_vlm_close(d);
    return -1;
}

long wf_vlm_count(const wf_vlm *d)
{
    return d ? d->n : 0;
}

void wf_vlm_floors(const wf_vlm *d, double *without_image, double *with_image)
{
    if (without_image)
        *without_image = d ? d->floor_text : -1;
    if (with_image)
        *with_image = d ? d->floor_image : -1;
}

static uint64_t mix64(uint64_t z)
{
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* A keyed permutation of [0, n): a 4-round Feistel network over the smallest
 * even power of two >= n, cycle-walking until the value falls below n (a
 * bijection restricted to [0, n) stays one). */
static uint64_t permute(uint64_t i, uint64_t n, uint64_t key)
{
    int bits = 2;
    while ((1ULL << bits) < n)
        bits += 2;
    int half = bits / 2;
    uint64_t mask = (1ULL << half) - 1;
    do {
        uint64_t l = i >> half, r = i & mask;
        for (int round = 0; round < 4; round++) {
            uint64_t f = mix64(key ^ (r + 0x9E3779B97F4A7C15ULL * (uint64_t)(round + 1))) & mask;
            uint64_t nl = r;
            r = l ^ f;
            l = nl;
        }
        i = l << half | r;
    } while (i >= n);
    return i;
}

long wf_vlm_index(const wf_vlm *d, uint64_t seed, uint64_t g)
{
    if (!d)
        return 0;
    uint64_t n = (uint64_t)d->n, epoch = g / n;
    uint64_t key = mix64(mix64(seed + 0x9E3779B97F4A7C15ULL) ^ (epoch * 0xD1B54A32D192ED03ULL));
    return (long)permute(g % n, n, key);
}

int wf_vlm_record(const wf_vlm *d, long r, const uint8_t **image,
                  const uint8_t **tokens, const uint8_t **mask)
{
    if (!d || r < 0 || r >= d->n)
        return -1;
    const uint8_t *p = d->map + WF_VLM_HEADER_BYTES + r * d->rec_bytes;
    if (image)
        *image = p;
    if (tokens)
        *tokens = p + d->img_bytes;
    if (mask)
        *mask = p + d->img_bytes + 2 * (d->seq + 1);
    return 0;
}

int wf_vlm_sample(const wf_vlm *d, uint64_t seed, uint64_t g, uint8_t *image,
                  int32_t *inputs, int32_t *targets, uint8_t *loss,
                  char *err, size_t errlen)
{
    if (!d || !image || !inputs || !targets || !loss) {
        set_err(err, errlen, "vlm data: wf_vlm_sample called with a NULL %s",
                !d ? "data handle" : "output buffer");
        return -1;
    }
    const uint8_t *img = NULL, *t = NULL, *m = NULL;
    wf_vlm_record(d, wf_vlm_index(d, seed, g), &img, &t, &m);
    memcpy(image, img, (size_t)d->img_bytes);
    for (int i = 0; i <= d->seq; i++) {
        int32_t v = (int32_t)((unsigned)t[2 * i] | (unsigned)t[2 * i + 1] << 8);
        if (i < d->seq)
            inputs[i] = v;
        if (i > 0) {
            targets[i - 1] = v;
            loss[i - 1] = m[i];
        }
    }
    return 0;
}

void wf_vlm_close(wf_vlm *d)
{
    if (!d)
        return;
    if (d->map)
        munmap((void *)d->map, d->map_len);
    free(d->path);
    free(d);
}
