/* safetensors.c: fp32 safetensors checkpoints (see safetensors.h). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "safetensors.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "crc32c.h"
#include "err_text.h"

#define FILE_MAX_NDIM WF_ST_FILE_MAX_NDIM
#define MAX_HEADER_BYTES (100L * 1024 * 1024) /* the reference reader's limit */
#define MAX_EXACT_INT 9007199254740992.0      /* 2^53 */

static int host_is_le(void)
{
    const uint32_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap4(void *p, size_t n)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++, b += 4) {
        unsigned char t0 = b[0], t1 = b[1];
        b[0] = b[3];
        b[1] = b[2];
        b[2] = t1;
        b[3] = t0;
    }
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *r = malloc(n);
    if (r)
        memcpy(r, s, n);
    return r;
}

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The first name that occurs twice in names[0..n), or NULL: a sorted copy,
 * so n log n (a pairwise scan took 32 s for 40k tensors).  *oom is set when
 * the copy cannot be made. */
static const char *first_duplicate(const char **names, int n, int *oom)
{
    *oom = 0;
    if (n < 2)
        return NULL;
    const char **s = malloc(sizeof *s * (size_t)n);
    if (!s) {
        *oom = 1;
        return NULL;
    }
    memcpy(s, names, sizeof *s * (size_t)n);
    qsort(s, (size_t)n, sizeof *s, cmp_str_ptr);
    const char *dup = NULL;
    for (int i = 1; i < n && !dup; i++)
        if (strcmp(s[i - 1], s[i]) == 0)
            dup = s[i];
    free(s);
    return dup;
}

/* "[a,b,c]" into buf */
static void fmt_shape(char *buf, size_t len, int ndim, const long *shape)
{
    size_t used = 0;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, len, "[");
    for (int i = 0; i < ndim && used < len; i++)
        used += (size_t)snprintf(buf + used, len - used, i ? ",%ld" : "%ld", shape[i]);
    if (used < len)
        snprintf(buf + used, len - used, "]");
}

/* ---- writing ------------------------------------------------------------- */

typedef struct {
    char *s;
    size_t len, cap;
    int oom;
} strbuf;

static void sb_put(strbuf *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->oom = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

static void sb_str(strbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

/* A JSON string literal; bytes >= 0x80 pass through (UTF-8 names). */
static void sb_json_str(strbuf *b, const char *s)
{
    sb_put(b, "\"", 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        switch (*p) {
        case '"': sb_put(b, "\\\"", 2); break;
        case '\\': sb_put(b, "\\\\", 2); break;
        case '\n': sb_put(b, "\\n", 2); break;
        case '\r': sb_put(b, "\\r", 2); break;
        case '\t': sb_put(b, "\\t", 2); break;
        default:
            if (*p < 0x20) {
                snprintf(esc, sizeof esc, "\\u%04x", *p);
                sb_put(b, esc, 6);
            } else {
                sb_put(b, (const char *)p, 1);
            }
        }
    }
    sb_put(b, "\"", 1);
}

/* numel of a tensor given to the writer, or -1 if the product overflows */
static long numel_of(int ndim, const long *shape)
{
    long n = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] != 0 && n > (LONG_MAX / 4) / shape[i])
            return -1;
        n *= shape[i];
    }
    return n;
}

static void sync_parent_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char *dir;
    if (!slash) {
        dir = dup_str(".");
    } else {
        size_t len = slash == path ? 1 : (size_t)(slash - path);
        dir = malloc(len + 1);
        if (dir) {
            memcpy(dir, path, len);
            dir[len] = '\0';
        }
    }
    if (!dir)
        return;
    int fd = open(dir, O_RDONLY);
    if (fd >= 0) {
        (void)fsync(fd);
        close(fd);
    }
    free(dir);
}

int wf_st_write(const char *path, const wf_st_tensor *t, int n,
                const char *const *meta_kv, int n_meta, char *err, size_t errlen)
{
    return wf_st_write_sums(path, t, n, meta_kv, n_meta, NULL, err, errlen);
}

/* Checks the tensor list and metadata a writer is given; with data, that
 * every non-empty tensor has its values. */
static int check_list(const char *path, const wf_st_tensor *t, int n, const char *const *meta_kv,
                      int n_meta, int data, char *err, size_t errlen)
{
    if (!path || !*path) {
        set_err(err, errlen, "checkpoint: no output path given");
        return -1;
    }
    if (n < 0 || (n > 0 && !t)) {
        set_err(err, errlen, "checkpoint %s: invalid tensor list (n = %d%s)", path, n,
                n > 0 ? ", tensors NULL" : "; must be >= 0");
        return -1;
    }
    if (n_meta < 0 || (n_meta > 0 && !meta_kv)) {
        set_err(err, errlen, "checkpoint %s: invalid metadata list (n_meta = %d%s)", path,
                n_meta, n_meta > 0 ? ", meta_kv NULL" : "; must be >= 0");
        return -1;
    }
    for (int i = 0; i < n_meta; i++) {
        if (!meta_kv[2 * i] || !meta_kv[2 * i + 1]) {
            set_err(err, errlen, "checkpoint %s: metadata pair %d has a NULL %s", path, i,
                    meta_kv[2 * i] ? "value" : "key");
            return -1;
        }
        for (int j = 0; j < i; j++)
            if (strcmp(meta_kv[2 * i], meta_kv[2 * j]) == 0) {
                set_err(err, errlen, "checkpoint %s: metadata key '%s' is given twice",
                        path, meta_kv[2 * i]);
                return -1;
            }
    }
    for (int i = 0; i < n; i++) {
        const wf_st_tensor *x = &t[i];
        if (!x->name || !*x->name || strcmp(x->name, "__metadata__") == 0) {
            set_err(err, errlen,
                    "checkpoint %s: tensor %d has an invalid name '%s' (names must be "
                    "non-empty and not __metadata__)",
                    path, i, x->name ? x->name : "(null)");
            return -1;
        }
        if (x->ndim < 0 || x->ndim > WF_ST_MAX_NDIM) {
            set_err(err, errlen, "checkpoint %s: tensor %s has ndim %d (valid: 0..%d)", path,
                    x->name, x->ndim, WF_ST_MAX_NDIM);
            return -1;
        }
        for (int d = 0; d < x->ndim; d++)
            if (x->shape[d] < 0) {
                set_err(err, errlen,
                        "checkpoint %s: tensor %s has negative dimension %ld at axis %d",
                        path, x->name, x->shape[d], d);
                return -1;
            }
        long ne = numel_of(x->ndim, x->shape);
        if (ne < 0) {
            set_err(err, errlen, "checkpoint %s: tensor %s is too large (size overflows)",
                    path, x->name);
            return -1;
        }
        if (data && ne > 0 && !x->data) {
            set_err(err, errlen, "checkpoint %s: tensor %s has %ld elements but no data",
                    path, x->name, ne);
            return -1;
        }
    }

    const char **names = malloc(sizeof *names * (size_t)(n > 0 ? n : 1));
    if (!names) {
        set_err(err, errlen, "checkpoint %s: out of memory", path);
        return -1;
    }
    for (int i = 0; i < n; i++)
        names[i] = t[i].name;
    int oom;
    const char *twice = first_duplicate(names, n, &oom);
    if (twice || oom)
        set_err(err, errlen, oom ? "checkpoint %s: out of memory" :
                "checkpoint %s: tensor name %s is given twice", path, twice);
    free(names);
    return twice || oom ? -1 : 0;
}

/* The JSON header for the list, padded to 8 bytes; -1 (h->s freed) on
 * overflow or out of memory. */
static int build_header(strbuf *h, const char *path, const wf_st_tensor *t, int n,
                        const char *const *meta_kv, int n_meta, char *err, size_t errlen)
{
    sb_str(h, "{");
    int first = 1;
    if (n_meta > 0) {
        sb_str(h, "\"__metadata__\":{");
        for (int i = 0; i < n_meta; i++) {
            if (i)
                sb_str(h, ",");
            sb_json_str(h, meta_kv[2 * i]);
            sb_str(h, ":");
            sb_json_str(h, meta_kv[2 * i + 1]);
        }
        sb_str(h, "}");
        first = 0;
    }
    long off = 0;
    for (int i = 0; i < n; i++) {
        char num[64];
        long bytes = 4 * numel_of(t[i].ndim, t[i].shape);
        if (off > LONG_MAX - bytes) {
            free(h->s);
            set_err(err, errlen, "checkpoint %s: total tensor size overflows", path);
            return -1;
        }
        if (!first)
            sb_str(h, ",");
        first = 0;
        sb_json_str(h, t[i].name);
        sb_str(h, ":{\"dtype\":\"F32\",\"shape\":[");
        for (int d = 0; d < t[i].ndim; d++) {
            snprintf(num, sizeof num, d ? ",%ld" : "%ld", t[i].shape[d]);
            sb_str(h, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%ld,%ld]}", off, off + bytes);
        sb_str(h, num);
        off += bytes;
    }
    sb_str(h, "}");
    while (!h->oom && h->len % 8 != 0)
        sb_str(h, " ");
    if (h->oom) {
        free(h->s);
        set_err(err, errlen, "checkpoint %s: out of memory building the header", path);
        return -1;
    }
    return 0;
}

struct wf_st_writer {
    FILE *f;
    char *path, *tmp;
    int n, at;             /* tensors; the one whose bytes come next */
    long *bytes;           /* each tensor's data bytes */
    long done;             /* bytes of tensor `at` written so far */
    int sums;              /* checksums wanted */
    uint32_t crc, file_crc;  /* tensor at's so far; the file's so far */
    long file_bytes;
    uint32_t *tensor_crc;
};

static void writer_free(wf_st_writer *w)
{
    free(w->path);
    free(w->tmp);
    free(w->bytes);
    free(w->tensor_crc);
    free(w);
}

void wf_st_writer_abort(wf_st_writer *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    remove(w->tmp);
    writer_free(w);
}

/* tensors of no bytes are complete as soon as they come up */
static void skip_empty(wf_st_writer *w)
{
    while (w->at < w->n && w->bytes[w->at] == 0)
        w->tensor_crc[w->at++] = 0;
}

static int write_failed(wf_st_writer *w, char *err, size_t errlen)
{
    set_err(err, errlen,
            "checkpoint %s: writing temporary file %s failed: %s (any previous %s is unchanged)",
            w->path, w->tmp, strerror(errno), w->path);
    return -1;
}

int wf_st_writer_open(wf_st_writer **out, const char *path, const wf_st_tensor *t, int n,
                      const char *const *meta_kv, int n_meta, int sums, char *err, size_t errlen)
{
    *out = NULL;
    if (check_list(path, t, n, meta_kv, n_meta, 0, err, errlen) != 0)
        return -1;
    strbuf h = {0};
    if (build_header(&h, path, t, n, meta_kv, n_meta, err, errlen) != 0)
        return -1;
    wf_st_writer *w = calloc(1, sizeof *w);
    size_t tlen = strlen(path) + 32;
    if (w) {
        w->path = dup_str(path);
        w->tmp = malloc(tlen);
        w->bytes = malloc(sizeof *w->bytes * (size_t)(n ? n : 1));
        w->tensor_crc = malloc(sizeof *w->tensor_crc * (size_t)(n ? n : 1));
    }
    if (!w || !w->path || !w->tmp || !w->bytes || !w->tensor_crc) {
        if (w)
            writer_free(w);
        free(h.s);
        set_err(err, errlen, "checkpoint %s: out of memory", path);
        return -1;
    }
    snprintf(w->tmp, tlen, "%s.tmp.%ld", path, (long)getpid());
    w->n = n;
    w->sums = sums;
    for (int i = 0; i < n; i++)
        w->bytes[i] = 4 * numel_of(t[i].ndim, t[i].shape);
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        set_err(err, errlen, "checkpoint %s: cannot create temporary file %s: %s", path, w->tmp,
                strerror(errno));
        free(h.s);
        writer_free(w);
        return -1;
    }
    unsigned char lenb[8];
    for (int i = 0; i < 8; i++)
        lenb[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    if (fwrite(lenb, 1, 8, w->f) != 8 || fwrite(h.s, 1, h.len, w->f) != h.len) {
        write_failed(w, err, errlen);
        free(h.s);
        wf_st_writer_abort(w);
        return -1;
    }
    /* the file's checksum: the header's, then each tensor's joined on */
    w->file_crc = sums ? wf_crc32c(wf_crc32c(0, lenb, 8), h.s, h.len) : 0;
    w->file_bytes = 8 + (long)h.len;
    free(h.s);
    skip_empty(w);
    *out = w;
    return 0;
}

int wf_st_writer_bytes(wf_st_writer *w, const void *le, size_t n, char *err, size_t errlen)
{
    const unsigned char *b = le;
    while (n > 0) {
        if (w->at >= w->n) {
            set_err(err, errlen, "checkpoint %s: %zu bytes more than its tensors hold", w->path, n);
            return -1;
        }
        size_t k = (size_t)(w->bytes[w->at] - w->done);
        if (k > n)
            k = n;
        if (w->sums)
            w->crc = wf_crc32c(w->crc, b, k);
        if (fwrite(b, 1, k, w->f) != k)
            return write_failed(w, err, errlen);
        b += k, n -= k;
        w->done += (long)k;
        if (w->done == w->bytes[w->at]) {
            w->tensor_crc[w->at] = w->crc;
            w->file_crc = wf_crc32c_combine(w->file_crc, w->crc, (size_t)w->bytes[w->at]);
            w->file_bytes += w->bytes[w->at];
            w->at++, w->done = 0, w->crc = 0;
            skip_empty(w);
        }
    }
    return 0;
}

int wf_st_writer_floats(wf_st_writer *w, const float *x, long n, char *err, size_t errlen)
{
    enum { PIECE = 1 << 16 };  /* floats: 256 KiB, checksummed while in the cache */
    int le = host_is_le();
    float *buf = le ? NULL : malloc(sizeof(float) * PIECE);
    if (!le && !buf) {
        set_err(err, errlen, "checkpoint %s: out of memory", w->path);
        return -1;
    }
    int rc = 0;
    for (long i = 0; i < n && rc == 0;) {
        long k = n - i < PIECE ? n - i : PIECE;
        const float *piece = x + i;
        if (!le) {
            memcpy(buf, piece, (size_t)k * sizeof(float));
            swap4(buf, (size_t)k);
            piece = buf;
        }
        rc = wf_st_writer_bytes(w, piece, (size_t)k * sizeof(float), err, errlen);
        i += k;
    }
    free(buf);
    return rc;
}

int wf_st_writer_finish(wf_st_writer *w, wf_st_sums *sums, char *err, size_t errlen)
{
    if (w->at < w->n) {
        set_err(err, errlen, "checkpoint %s: tensor %d of %d has %ld of its %ld bytes", w->path,
                w->at, w->n, w->done, w->bytes[w->at]);
        wf_st_writer_abort(w);
        return -1;
    }
    if (fflush(w->f) != 0 || fsync(fileno(w->f)) != 0) {
        write_failed(w, err, errlen);
        wf_st_writer_abort(w);
        return -1;
    }
    FILE *g = w->f;
    w->f = NULL;
    if (fclose(g) != 0) {
        write_failed(w, err, errlen);
        wf_st_writer_abort(w);
        return -1;
    }
    if (rename(w->tmp, w->path) != 0) {
        set_err(err, errlen, "checkpoint %s: cannot rename %s into place: %s", w->path, w->tmp,
                strerror(errno));
        wf_st_writer_abort(w);
        return -1;
    }
    sync_parent_dir(w->path);
    if (sums && w->sums) {
        sums->crc = w->file_crc;
        sums->bytes = w->file_bytes;
        if (sums->tensor_crc)
            memcpy(sums->tensor_crc, w->tensor_crc, sizeof *w->tensor_crc * (size_t)w->n);
    }
    writer_free(w);
    return 0;
}

int wf_st_write_sums(const char *path, const wf_st_tensor *t, int n, const char *const *meta_kv,
                     int n_meta, wf_st_sums *sums, char *err, size_t errlen)
{
    wf_st_writer *w;
    if (check_list(path, t, n, meta_kv, n_meta, 1, err, errlen) != 0 ||
        wf_st_writer_open(&w, path, t, n, meta_kv, n_meta, sums != NULL, err, errlen) != 0)
        return -1;
    for (int i = 0; i < n; i++)
        if (wf_st_writer_floats(w, t[i].data, numel_of(t[i].ndim, t[i].shape), err, errlen) != 0) {
            wf_st_writer_abort(w);
            return -1;
        }
    return wf_st_writer_finish(w, sums, err, errlen);
}

/* ---- reading ------------------------------------------------------------- */

typedef struct {
    char *name;
    int ndim;
    long shape[FILE_MAX_NDIM];
    size_t begin, end;   /* bytes, relative to the data section */
    int order;           /* position in the JSON, to keep sorting stable */
} st_entry;

struct wf_st_file {
    char *path;
    const unsigned char *map;
    size_t map_len;
    const unsigned char *data;  /* start of the data section */
    size_t data_len;
    st_entry *ent;
    int n;
    const st_entry **by_name;   /* ent sorted by name, for lookups */
    char **meta;                /* key, value, key, value, ... */
    int n_meta;
};

/* A JSON number that is an exact integer in [0, 2^53]. */
static int json_uint(const cJSON *x, size_t *out)
{
    if (!cJSON_IsNumber(x))
        return -1;
    double d = x->valuedouble;
    if (!(d >= 0 && d <= MAX_EXACT_INT))
        return -1;
    unsigned long long v = (unsigned long long)d;
    if ((double)v != d || v > (unsigned long long)SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

static int cmp_entry_name(const void *a, const void *b)
{
    return strcmp((*(const st_entry *const *)a)->name, (*(const st_entry *const *)b)->name);
}

static int cmp_entry(const void *a, const void *b)
{
    const st_entry *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end)
        return x->end < y->end ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* Fills e from the JSON of one tensor; on error writes the message. */
static int parse_entry(const char *path, const cJSON *item, size_t data_len, st_entry *e,
                       char *err, size_t errlen)
{
    const char *name = item->string;
    if (!cJSON_IsObject(item)) {
        set_err(err, errlen,
                "checkpoint %s: header entry %s is not an object (expected "
                "{\"dtype\",\"shape\",\"data_offsets\"})",
                path, name);
        return -1;
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *sh = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *of = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dt) || !cJSON_IsArray(sh) || !cJSON_IsArray(of)) {
        set_err(err, errlen,
                "checkpoint %s: tensor %s lacks a string \"dtype\", an array \"shape\" or "
                "an array \"data_offsets\"",
                path, name);
        return -1;
    }
    if (strcmp(dt->valuestring, "F32") != 0) {
        set_err(err, errlen,
                "checkpoint %s: tensor %s has dtype %s; only F32 is supported", path, name,
                dt->valuestring);
        return -1;
    }
    int nd = cJSON_GetArraySize(sh);
    if (nd > FILE_MAX_NDIM) {
        set_err(err, errlen, "checkpoint %s: tensor %s has %d dimensions (at most %d supported)",
                path, name, nd, FILE_MAX_NDIM);
        return -1;
    }
    e->ndim = nd;
    unsigned long long numel = 1;
    int overflow = 0;
    for (int d = 0; d < nd; d++) {
        size_t v;
        if (json_uint(cJSON_GetArrayItem(sh, d), &v) != 0 || v > (size_t)LONG_MAX) {
            set_err(err, errlen,
                    "checkpoint %s: tensor %s has an invalid shape entry at axis %d "
                    "(expected a non-negative integer)",
                    path, name, d);
            return -1;
        }
        e->shape[d] = (long)v;
        if (v != 0 && numel > (unsigned long long)SIZE_MAX / 4 / v)
            overflow = 1;
        numel *= v;
    }
    size_t b, en;
    if (cJSON_GetArraySize(of) != 2 || json_uint(cJSON_GetArrayItem(of, 0), &b) != 0 ||
        json_uint(cJSON_GetArrayItem(of, 1), &en) != 0 || b > en) {
        set_err(err, errlen,
                "checkpoint %s: tensor %s has invalid data_offsets (expected [begin,end] "
                "with 0 <= begin <= end)",
                path, name);
        return -1;
    }
    if (en > data_len) {
        set_err(err, errlen,
                "checkpoint %s: tensor %s has data_offsets [%zu,%zu] beyond the %zu-byte "
                "data section (file truncated?)",
                path, name, b, en, data_len);
        return -1;
    }
    char sbuf[160];
    fmt_shape(sbuf, sizeof sbuf, e->ndim, e->shape);
    if (overflow || (unsigned long long)(en - b) != numel * 4) {
        set_err(err, errlen,
                "checkpoint %s: tensor %s has shape %s (%llu bytes of F32) but data_offsets "
                "[%zu,%zu] span %zu bytes",
                path, name, sbuf, overflow ? 0ULL : numel * 4, b, en, en - b);
        return -1;
    }
    e->begin = b;
    e->end = en;
    e->name = dup_str(name);
    if (!e->name) {
        set_err(err, errlen, "checkpoint %s: out of memory", path);
        return -1;
    }
    return 0;
}

int wf_st_open(wf_st_file **out, const char *path, char *err, size_t errlen)
{
    if (out)
        *out = NULL;
    if (!out || !path || !*path) {
        set_err(err, errlen, "checkpoint: no path given (expected a .safetensors file)");
        return -1;
    }
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below */
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        set_err(err, errlen, "checkpoint %s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st = {0};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        set_err(err, errlen, "checkpoint %s: not a regular file (%s)", path,
                S_ISFIFO(st.st_mode) ? "a FIFO" : S_ISDIR(st.st_mode) ? "a folder" :
                S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" :
                S_ISSOCK(st.st_mode) ? "a socket" : "unreadable");
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    if (st.st_size < 8) {
        set_err(err, errlen,
                "checkpoint %s: only %lld bytes, too small for the 8-byte header length "
                "of a safetensors file",
                path, (long long)st.st_size);
        close(fd);
        return -1;
    }
    void *m = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    int map_errno = errno;
    close(fd);
    if (m == MAP_FAILED) {
        set_err(err, errlen, "checkpoint %s: cannot map %zu bytes: %s", path, size,
                strerror(map_errno));
        return -1;
    }
    const unsigned char *map = m;

    wf_st_file *f = calloc(1, sizeof *f);
    if (!f || !(f->path = dup_str(path))) {
        free(f);
        munmap(m, size);
        set_err(err, errlen, "checkpoint %s: out of memory", path);
        return -1;
    }
    f->map = map;
    f->map_len = size;

    uint64_t hlen = 0;
    for (int i = 0; i < 8; i++)
        hlen |= (uint64_t)map[i] << (8 * i);
    if (hlen == 0 || hlen > size - 8 || hlen > (uint64_t)MAX_HEADER_BYTES) {
        set_err(err, errlen,
                "checkpoint %s: corrupt header: header length %llu does not fit the file "
                "(%zu bytes after the length field; valid: 1..%zu, at most %ld)",
                path, (unsigned long long)hlen, size - 8, size - 8, MAX_HEADER_BYTES);
        wf_st_close(f);
        return -1;
    }
    const char *hdr = (const char *)map + 8;
    f->data = map + 8 + hlen;
    f->data_len = size - 8 - (size_t)hlen;

    const char *end = NULL;
    cJSON *root = cJSON_ParseWithLengthOpts(hdr, (size_t)hlen, &end, 0);
    if (!root) {
        long pos = end ? (long)(end - hdr) : -1;
        set_err(err, errlen,
                "checkpoint %s: corrupt header: the %llu-byte JSON header does not parse "
                "(error near byte %ld of the header)",
                path, (unsigned long long)hlen, pos);
        wf_st_close(f);
        return -1;
    }
    for (const char *p = end; p && p < hdr + hlen; p++)
        if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r') {
            set_err(err, errlen,
                    "checkpoint %s: corrupt header: unexpected bytes after the JSON object "
                    "at byte %ld of the header (only space padding is allowed)",
                    path, (long)(p - hdr));
            cJSON_Delete(root);
            wf_st_close(f);
            return -1;
        }
    if (!cJSON_IsObject(root)) {
        set_err(err, errlen, "checkpoint %s: corrupt header: the JSON header is not an object",
                path);
        cJSON_Delete(root);
        wf_st_close(f);
        return -1;
    }

    int total = cJSON_GetArraySize(root);
    f->ent = calloc(total > 0 ? (size_t)total : 1, sizeof *f->ent);
    if (!f->ent) {
        set_err(err, errlen, "checkpoint %s: out of memory", path);
        cJSON_Delete(root);
        wf_st_close(f);
        return -1;
    }
    {   /* duplicate keys: cJSON keeps both; the format forbids them */
        const char **keys = malloc(sizeof *keys * (size_t)(total > 0 ? total : 1));
        int nk = 0, oom;
        if (!keys) {
            set_err(err, errlen, "checkpoint %s: out of memory", path);
            goto fail;
        }
        for (const cJSON *it = root->child; it; it = it->next)
            keys[nk++] = it->string;
        const char *twice = first_duplicate(keys, nk, &oom);
        if (twice || oom)
            set_err(err, errlen, oom ? "checkpoint %s: out of memory" :
                    "checkpoint %s: corrupt header: key %s appears twice", path, twice);
        free(keys);
        if (twice || oom)
            goto fail;
    }
    for (const cJSON *it = root->child; it; it = it->next) {
        if (strcmp(it->string, "__metadata__") == 0) {
            if (!cJSON_IsObject(it)) {
                set_err(err, errlen,
                        "checkpoint %s: __metadata__ is not an object of strings", path);
                goto fail;
            }
            int nm = cJSON_GetArraySize(it);
            f->meta = calloc(2 * (size_t)(nm > 0 ? nm : 1), sizeof *f->meta);
            if (!f->meta) {
                set_err(err, errlen, "checkpoint %s: out of memory", path);
                goto fail;
            }
            for (const cJSON *kv = it->child; kv; kv = kv->next) {
                if (!cJSON_IsString(kv)) {
                    set_err(err, errlen,
                            "checkpoint %s: __metadata__ value of %s is not a string "
                            "(metadata must map strings to strings)",
                            path, kv->string);
                    goto fail;
                }
                char *k = dup_str(kv->string), *v = dup_str(kv->valuestring);
                if (!k || !v) {
                    free(k);
                    free(v);
                    set_err(err, errlen, "checkpoint %s: out of memory", path);
                    goto fail;
                }
                f->meta[2 * f->n_meta] = k;
                f->meta[2 * f->n_meta + 1] = v;
                f->n_meta++;
            }
            continue;
        }
        st_entry *e = &f->ent[f->n];
        e->order = f->n;
        if (parse_entry(path, it, f->data_len, e, err, errlen) != 0)
            goto fail;
        f->n++;
    }
    cJSON_Delete(root);
    root = NULL;

    /* the tensors must tile the data section exactly */
    qsort(f->ent, (size_t)f->n, sizeof *f->ent, cmp_entry);
    size_t pos = 0;
    for (int i = 0; i < f->n; i++) {
        if (f->ent[i].begin != pos) {
            set_err(err, errlen,
                    "checkpoint %s: tensor %s starts at data offset %zu but the previous "
                    "tensor ends at %zu (tensors must be contiguous, without overlap or gaps)",
                    path, f->ent[i].name, f->ent[i].begin, pos);
            wf_st_close(f);
            return -1;
        }
        pos = f->ent[i].end;
    }
    f->by_name = malloc(sizeof *f->by_name * (size_t)(f->n > 0 ? f->n : 1));
    if (!f->by_name) {
        set_err(err, errlen, "checkpoint %s: out of memory", path);
        wf_st_close(f);
        return -1;
    }
    for (int i = 0; i < f->n; i++)
        f->by_name[i] = &f->ent[i];
    qsort(f->by_name, (size_t)f->n, sizeof *f->by_name, cmp_entry_name);
    if (pos != f->data_len) {
        set_err(err, errlen,
                "checkpoint %s: the tensors cover %zu bytes but the data section has %zu "
                "(%s)",
                path, pos, f->data_len, pos < f->data_len ? "trailing bytes" : "truncated");
        wf_st_close(f);
        return -1;
    }
    *out = f;
    return 0;

fail:
    cJSON_Delete(root);
    wf_st_close(f);
    return -1;
}

const char *wf_st_meta(const wf_st_file *f, const char *key)
{
    if (!f || !key)
        return NULL;
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta[2 * i], key) == 0)
            return f->meta[2 * i + 1];
    return NULL;
}

static const st_entry *find(const wf_st_file *f, const char *name)
{
    int lo = 0, hi = f->n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(f->by_name[mid]->name, name);
        if (c == 0)
            return f->by_name[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid - 1;
    }
    return NULL;
}

const void *wf_st_data(const wf_st_file *f, const char *name, size_t *bytes)
{
    const st_entry *e = f && name ? find(f, name) : NULL;
    if (!e)
        return NULL;
    if (bytes)
        *bytes = e->end - e->begin;
    return f->data + e->begin;
}

int wf_st_read(const wf_st_file *f, const char *name, int ndim, const long *shape,
               float *dst, char *err, size_t errlen)
{
    if (!f || !name || ndim < 0 || ndim > FILE_MAX_NDIM || (ndim > 0 && !shape)) {
        set_err(err, errlen, "checkpoint %s: wf_st_read called with invalid arguments "
                "(tensor %s, ndim %d)", f ? f->path : "(none)", name ? name : "(null)", ndim);
        return -1;
    }
    const st_entry *e = find(f, name);
    char want[160], have[160];
    fmt_shape(want, sizeof want, ndim, shape);
    if (!e) {
        set_err(err, errlen,
                "checkpoint %s: no tensor named %s (this model needs it with shape %s; the "
                "file has %d tensors)",
                f->path, name, want, f->n);
        return -1;
    }
    int same = e->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = e->shape[d] == shape[d];
    if (!same) {
        fmt_shape(have, sizeof have, e->ndim, e->shape);
        set_err(err, errlen, "checkpoint %s: tensor %s has shape %s, this model needs %s",
                f->path, name, have, want);
        return -1;
    }
    size_t bytes = e->end - e->begin;
    if (bytes == 0)
        return 0;
    if (!dst) {
        set_err(err, errlen, "checkpoint %s: NULL destination for tensor %s", f->path, name);
        return -1;
    }
    memcpy(dst, f->data + e->begin, bytes);
    if (!host_is_le())
        swap4(dst, bytes / 4);
    return 0;
}

int wf_st_read_range(const wf_st_file *f, const char *name, int ndim, const long *shape, long lo,
                     long hi, float *dst, char *err, size_t errlen)
{
    if (!f || !name || ndim < 0 || ndim > FILE_MAX_NDIM || (ndim > 0 && !shape) || lo < 0 || hi < lo ||
        (hi > lo && !dst)) {
        set_err(err, errlen, "checkpoint %s: wf_st_read_range called with invalid arguments "
                "(tensor %s, ndim %d, elements [%ld, %ld))", f ? f->path : "(none)", name ? name : "(null)",
                ndim, lo, hi);
        return -1;
    }
    const st_entry *e = find(f, name);
    int same = e && e->ndim == ndim;
    for (int d = 0; same && d < ndim; d++)
        same = e->shape[d] == shape[d];
    if (!same) {  /* wf_st_read words the missing tensor or the other shape */
        wf_st_read(f, name, ndim, shape, NULL, err, errlen);
        return -1;
    }
    size_t numel = (e->end - e->begin) / 4;
    if ((size_t)hi > numel) {
        set_err(err, errlen, "checkpoint %s: elements [%ld, %ld) of tensor %s, which has %zu",
                f->path, lo, hi, name, numel);
        return -1;
    }
    size_t bytes = 4 * (size_t)(hi - lo);
    memcpy(dst, f->data + e->begin + 4 * (size_t)lo, bytes);
    if (!host_is_le())
        swap4(dst, bytes / 4);
    return 0;
}

int wf_st_count(const wf_st_file *f)
{
    return f ? f->n : 0;
}

const char *wf_st_name(const wf_st_file *f, int i)
{
    if (!f || i < 0 || i >= f->n)
        return NULL;
    return f->ent[i].name;
}

int wf_st_shape(const wf_st_file *f, const char *name, long *shape, int max_ndim)
{
    if (!f || !name)
        return -1;
    const st_entry *e = find(f, name);
    if (!e)
        return -1;
    for (int d = 0; shape && d < e->ndim && d < max_ndim; d++)
        shape[d] = e->shape[d];
    return e->ndim;
}

void wf_st_close(wf_st_file *f)
{
    if (!f)
        return;
    if (f->ent)
        for (int i = 0; i < f->n; i++)
            free(f->ent[i].name);
    free(f->ent);
    free(f->by_name);
    if (f->meta)
        for (int i = 0; i < 2 * f->n_meta; i++)
            free(f->meta[i]);
    free(f->meta);
    free(f->path);
    if (f->map)
        munmap((void *)f->map, f->map_len);
    free(f);
}
