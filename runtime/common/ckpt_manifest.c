/* ckpt_manifest.c: writing and verifying manifest.json (see ckpt_manifest.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* renameat2, O_DIRECTORY */
#endif
#include "ckpt_manifest.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_folder.h"
#include "ckpt_shards.h"
#include "crc32c.h"
#include "safetensors.h"
#include "err_text.h"

#define MAX_SMALL_FILE (64L << 20)  /* manifest.json, config.json */
#define MAX_EXACT 9007199254740992.0 /* 2^53: integers JSON numbers hold exactly */

int wf_parse_count(const char *s, long *out)
{
    if (!s || !*s || strlen(s) > 18)
        return -1;
    long v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        v = v * 10 + (*p - '0');
    }
    *out = v;
    return 0;
}

static const char *kind_of(mode_t m)
{
    return S_ISDIR(m) ? "a folder" : S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO" :
           S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISSOCK(m) ? "a socket" : "not a regular file";
}

/* Opens a regular file without following a link or waiting on a FIFO. */
static int open_regular(const char *path, const char *shown, struct stat *st, char *err,
                        size_t errlen)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        struct stat l;
        if (errno == ENOENT)
            set_err(err, errlen, "%s: missing", shown);
        else if (lstat(path, &l) == 0 && !S_ISREG(l.st_mode))
            set_err(err, errlen, "%s: is %s, not a regular file (refused)", shown,
                    kind_of(l.st_mode));
        else
            set_err(err, errlen, "%s: cannot open: %s", shown, strerror(errno));
        return -1;
    }
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
        set_err(err, errlen, "%s: is %s, not a regular file (refused)", shown, kind_of(st->st_mode));
        close(fd);
        return -1;
    }
    return fd;
}

/* The CRC-32C and size of a whole regular file. */
static int crc_file(const char *path, const char *shown, uint32_t *crc, long *size, char *err,
                    size_t errlen)
{
    struct stat st;
    int fd = open_regular(path, shown, &st, err, errlen);
    if (fd < 0)
        return -1;
    static unsigned char buf[1 << 20];
    uint32_t c = 0;
    long n = 0;
    for (;;) {
        ssize_t k = read(fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0) {
            set_err(err, errlen, "%s: read failed: %s", shown, strerror(errno));
            close(fd);
            return -1;
        }
        if (k == 0)
            break;
        c = wf_crc32c(c, buf, (size_t)k);
        n += k;
    }
    close(fd);
    *crc = c;
    *size = n;
    return 0;
}

char *wf_ckpt_read_text(const char *path, const char *shown, long max_bytes, char *err, size_t errlen)
{
    struct stat st;
    int fd = open_regular(path, shown, &st, err, errlen);
    if (fd < 0)
        return NULL;
    if (st.st_size > max_bytes) {
        set_err(err, errlen, "%s: %lld bytes, more than the %ld a checkpoint's %s may have", shown,
                (long long)st.st_size, max_bytes, shown);
        close(fd);
        return NULL;
    }
    char *text = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (text && got < (size_t)st.st_size) {
        ssize_t k = read(fd, text + got, (size_t)st.st_size - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    close(fd);
    if (!text || got != (size_t)st.st_size) {
        set_err(err, errlen, "%s: cannot read it", shown);
        free(text);
        return NULL;
    }
    text[got] = '\0';
    return text;
}

/* manifest.json, config.json, a stage's hand-over of checksums */
static char *read_small(const char *path, const char *shown, char *err, size_t errlen)
{
    return wf_ckpt_read_text(path, shown, MAX_SMALL_FILE, err, errlen);
}

static void hex8(char out[9], uint32_t v)
{
    snprintf(out, 9, "%08x", v);
}

static int is_safetensors(const char *name)
{
    size_t n = strlen(name);
    return n > 12 && strcmp(name + n - 12, ".safetensors") == 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- writing ------------------------------------------------------------- */

static cJSON *tensors_of(const char *path, const char *shown, char *err, size_t errlen)
{
    wf_st_file *f;
    char e[512];
    if (wf_st_open(&f, path, e, sizeof e) != 0) {
        set_err(err, errlen, "%s: %s", shown, e);
        return NULL;
    }
    cJSON *t = cJSON_CreateObject();
    for (int i = 0; t && i < wf_st_count(f); i++) {
        const char *name = wf_st_name(f, i);
        long shape[WF_ST_FILE_MAX_NDIM];
        int nd = wf_st_shape(f, name, shape, WF_ST_FILE_MAX_NDIM);
        size_t bytes;
        const void *data = wf_st_data(f, name, &bytes);
        cJSON *one = cJSON_AddObjectToObject(t, name), *sh = cJSON_AddArrayToObject(one, "shape");
        for (int d = 0; d < nd; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)shape[d]));
        char crc[9];
        hex8(crc, wf_crc32c(0, data, bytes));
        cJSON_AddStringToObject(one, "crc32c", crc);
    }
    wf_st_close(f);
    return t;
}

/* One cJSON object per file, keyed by its name: {"bytes", "crc32c", "tensors"}
 * exactly as the entry the manifest gives a file it reads. */
struct wf_manifest_known {
    cJSON *files;
};

wf_manifest_known *wf_manifest_known_new(void)
{
    wf_manifest_known *k = malloc(sizeof *k);
    if (k && !(k->files = cJSON_CreateObject())) {
        free(k);
        k = NULL;
    }
    return k;
}

void wf_manifest_known_free(wf_manifest_known *k)
{
    if (!k)
        return;
    cJSON_Delete(k->files);
    free(k);
}

int wf_manifest_known_add(wf_manifest_known *k, const char *name, const wf_st_tensor *t, int n,
                          const wf_st_sums *s)
{
    char hex[9];
    cJSON *f = cJSON_CreateObject(), *tensors = cJSON_CreateObject();
    if (!f || !tensors) {
        cJSON_Delete(f);
        cJSON_Delete(tensors);
        return -1;
    }
    cJSON_AddNumberToObject(f, "bytes", (double)s->bytes);
    hex8(hex, s->crc);
    cJSON_AddStringToObject(f, "crc32c", hex);
    for (int i = 0; i < n; i++) {
        cJSON *one = cJSON_AddObjectToObject(tensors, t[i].name);
        cJSON *sh = one ? cJSON_AddArrayToObject(one, "shape") : NULL;
        if (!sh)
            break;
        for (int d = 0; d < t[i].ndim; d++)
            cJSON_AddItemToArray(sh, cJSON_CreateNumber((double)t[i].shape[d]));
        hex8(hex, s->tensor_crc[i]);
        cJSON_AddStringToObject(one, "crc32c", hex);
    }
    cJSON_AddItemToObject(f, "tensors", tensors);
    cJSON_DeleteItemFromObjectCaseSensitive(k->files, name);  /* a file written again */
    cJSON_AddItemToObject(k->files, name, f);
    return cJSON_GetArraySize(tensors) == n ? 0 : -1;
}

int wf_ckpt_write_text(const char *path, const char *text, char *err, size_t errlen)
{
    char tmp[PATH_MAX];
    if (wf_path_fmt(tmp, sizeof tmp, err, errlen, "%s.tmp.%d", path, (int)getpid()) != 0)
        return -1;
    FILE *out = fopen(tmp, "w");
    size_t len = strlen(text);
    int ok = out && fwrite(text, 1, len, out) == len && fputc('\n', out) != EOF && fflush(out) == 0 &&
             fsync(fileno(out)) == 0;
    if (out && fclose(out) != 0)
        ok = 0;
    if (!ok || rename(tmp, path) != 0) {  /* under its final name only once complete */
        set_err(err, errlen, "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return -1;
    }
    return 0;
}

int wf_manifest_known_save(const wf_manifest_known *k, const char *path, char *err, size_t errlen)
{
    char *text = cJSON_PrintUnformatted(k->files);
    if (!text) {
        set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = wf_ckpt_write_text(path, text, err, errlen);
    free(text);
    return rc;
}

int wf_manifest_known_load(wf_manifest_known *k, const char *path, char *err, size_t errlen)
{
    char *text = read_small(path, path, err, errlen);
    if (!text)
        return -1;
    cJSON *files = cJSON_Parse(text);
    free(text);
    if (!cJSON_IsObject(files)) {
        set_err(err, errlen, "%s: does not parse as a JSON object", path);
        cJSON_Delete(files);
        return -1;
    }
    while (files->child) {
        cJSON *f = cJSON_DetachItemViaPointer(files, files->child);
        cJSON_DeleteItemFromObjectCaseSensitive(k->files, f->string);
        cJSON_AddItemToObject(k->files, f->string, f);
    }
    cJSON_Delete(files);
    return 0;
}

int wf_manifest_write(const char *dir, const wf_ckpt_info *info, const char *config_text,
                      const wf_manifest_known *known, char *err, size_t errlen)
{
    char path[PATH_MAX], tmp[PATH_MAX];
    DIR *d = opendir(dir);
    if (!d) {
        set_err(err, errlen, "%s: cannot read the folder: %s", dir, strerror(errno));
        return -1;
    }
    char **names = NULL;
    int n = 0, cap = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !strcmp(e->d_name, WF_CKPT_MANIFEST))
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 16;
            char **more = realloc(names, sizeof *names * (size_t)cap);
            if (!more)
                break;
            names = more;
        }
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_names);

    cJSON *m = cJSON_CreateObject();
    cJSON_AddStringToObject(m, "format", "weft-checkpoint");
    cJSON_AddNumberToObject(m, "version", 1);
    cJSON_AddNumberToObject(m, "step", (double)info->step);
    cJSON_AddNumberToObject(m, "samples_seen", (double)info->samples_seen);
    cJSON_AddNumberToObject(m, "global_batch", (double)info->global_batch);
    cJSON_AddNumberToObject(m, "seed", (double)info->seed);
    cJSON_AddStringToObject(m, "plan", info->plan);
    cJSON_AddStringToObject(m, "plan_hash", info->plan_hash);
    cJSON_AddStringToObject(m, "model", info->model);
    if (info->has_scaler) {
        cJSON *s = cJSON_AddObjectToObject(m, "loss_scale");
        cJSON_AddNumberToObject(s, "scale", info->scale);
        cJSON_AddNumberToObject(s, "hysteresis", (double)info->hysteresis);
        cJSON_AddNumberToObject(s, "good_steps", (double)info->good_steps);
        cJSON_AddNumberToObject(s, "skipped", (double)info->skipped);
    }
    cJSON *cfg = config_text ? cJSON_Parse(config_text) : NULL;
    if (cfg)
        cJSON_AddItemToObject(m, "config", cfg);
    cJSON *files = cJSON_AddObjectToObject(m, "files");
    int rc = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        uint32_t crc;
        long size;
        char hex[9];
        if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s", dir, names[i]) != 0) {
            rc = -1;
            break;
        }
        const cJSON *k = known ? cJSON_GetObjectItemCaseSensitive(known->files, names[i]) : NULL;
        if (k) {  /* checksummed as written: its size on disk must be what was written */
            struct stat st;
            int fd = open_regular(path, path, &st, err, errlen);
            if (fd < 0) {
                rc = -1;
                break;
            }
            close(fd);
            const cJSON *b = cJSON_GetObjectItemCaseSensitive(k, "bytes");
            double want = b ? b->valuedouble : -1;
            if ((double)st.st_size != want) {
                set_err(err, errlen, "%s: %lld bytes on disk, %.0f written", path, (long long)st.st_size, want);
                rc = -1;
                break;
            }
            cJSON_AddItemToObject(files, names[i], cJSON_Duplicate(k, 1));
            continue;
        }
        if (crc_file(path, path, &crc, &size, err, errlen) != 0) {
            rc = -1;
            break;
        }
        cJSON *f = cJSON_AddObjectToObject(files, names[i]);
        cJSON_AddNumberToObject(f, "bytes", (double)size);
        hex8(hex, crc);
        cJSON_AddStringToObject(f, "crc32c", hex);
        if (is_safetensors(names[i])) {
            cJSON *t = tensors_of(path, path, err, errlen);
            if (!t)
                rc = -1;
            else
                cJSON_AddItemToObject(f, "tensors", t);
        }
    }
    for (int i = 0; i < n; i++)
        free(names[i]);
    free(names);
    char *text = rc == 0 ? cJSON_Print(m) : NULL;
    cJSON_Delete(m);
    if (rc != 0)
        return -1;
    if (!text || wf_path_fmt(tmp, sizeof tmp, err, errlen, "%s/%s", dir, WF_CKPT_MANIFEST) != 0) {
        if (!text)
            set_err(err, errlen, "%s: out of memory writing the manifest", dir);
        free(text);
        return -1;
    }
    FILE *out = fopen(tmp, "w");
    size_t len = strlen(text);
    if (!out || fwrite(text, 1, len, out) != len || fputc('\n', out) == EOF || fflush(out) != 0 ||
        fsync(fileno(out)) != 0) {
        set_err(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        if (out)
            fclose(out);
        free(text);
        return -1;
    }
    free(text);
    if (fclose(out) != 0) {
        set_err(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- verifying ----------------------------------------------------------- */

/* The JSON text of x for a message (at most 40 characters). */
static const char *shown_value(const cJSON *x, char *buf, size_t n)
{
    if (!x)
        return "missing";
    char *t = cJSON_PrintUnformatted(x);
    snprintf(buf, n, "%.40s%s", t ? t : "?", t && strlen(t) > 40 ? "..." : "");
    free(t);
    return buf;
}

/* m[key] (or m[key][sub]) as an exact integer in [lo, 2^53]. */
static int get_int(const cJSON *m, const char *key, const char *sub, long lo, long *out, char *err,
                   size_t errlen)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, key);
    char field[80], v[64];
    snprintf(field, sizeof field, "%s%s%s", key, sub ? "." : "", sub ? sub : "");
    if (sub)
        x = cJSON_GetObjectItemCaseSensitive(x, sub);
    double d = cJSON_IsNumber(x) ? x->valuedouble : NAN;
    if (!(d >= (double)lo && d <= MAX_EXACT) || d != floor(d)) {
        set_err(err, errlen, "%s: %s is %s, not %s integer%s", WF_CKPT_MANIFEST, field,
                shown_value(x, v, sizeof v), lo == 0 ? "a non-negative" : "a positive",
                x || !sub ? "" : " (a partial fp16 loss scaler state: refused)");
        return -1;
    }
    *out = (long)d;
    return 0;
}

static int get_str(const cJSON *m, const char *key, char *out, size_t n, char *err, size_t errlen)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(m, key);
    char v[64];
    if (!cJSON_IsString(x) || strlen(x->valuestring) >= n) {
        set_err(err, errlen, "%s: %s is %s, not a string of at most %zu bytes", WF_CKPT_MANIFEST, key,
                shown_value(x, v, sizeof v), n - 1);
        return -1;
    }
    snprintf(out, n, "%s", x->valuestring);
    return 0;
}

static int parse_manifest(const cJSON *m, wf_ckpt_info *info, char *err, size_t errlen)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(m, "format");
    if (!cJSON_IsObject(m) || !cJSON_IsString(fmt) || strcmp(fmt->valuestring, "weft-checkpoint")) {
        set_err(err, errlen, "%s: not a Weft checkpoint manifest (no \"format\": \"weft-checkpoint\")",
                WF_CKPT_MANIFEST);
        return -1;
    }
    long version = 0, seed;
    if (get_int(m, "version", NULL, 1, &version, err, errlen))
        return -1;
    if (version != 1) {
        set_err(err, errlen, "%s: version %ld; this Weft reads version 1", WF_CKPT_MANIFEST, version);
        return -1;
    }
    if (get_int(m, "step", NULL, 0, &info->step, err, errlen) ||
        get_int(m, "samples_seen", NULL, 0, &info->samples_seen, err, errlen) ||
        get_int(m, "global_batch", NULL, 1, &info->global_batch, err, errlen) ||
        get_int(m, "seed", NULL, 0, &seed, err, errlen) ||
        get_str(m, "plan", info->plan, sizeof info->plan, err, errlen) ||
        get_str(m, "plan_hash", info->plan_hash, sizeof info->plan_hash, err, errlen) ||
        get_str(m, "model", info->model, sizeof info->model, err, errlen))
        return -1;
    info->seed = (unsigned long long)seed;
    if (info->samples_seen != info->step * info->global_batch) {
        set_err(err, errlen, "%s: samples_seen %ld is not step %ld x global_batch %ld",
                WF_CKPT_MANIFEST, info->samples_seen, info->step, info->global_batch);
        return -1;
    }
    const cJSON *ls = cJSON_GetObjectItemCaseSensitive(m, "loss_scale");
    info->has_scaler = ls != NULL;
    if (ls) {
        const cJSON *s = cJSON_GetObjectItemCaseSensitive(ls, "scale");
        char v[64];
        if (!cJSON_IsObject(ls)) {
            set_err(err, errlen, "%s: loss_scale is %s, not an object", WF_CKPT_MANIFEST,
                    shown_value(ls, v, sizeof v));
            return -1;
        }
        /* cJSON reads 1e999 as inf */
        if (!cJSON_IsNumber(s) || !isfinite(s->valuedouble) || !(s->valuedouble > 0)) {
            set_err(err, errlen, "%s: loss_scale.scale is %s, not a finite positive number%s",
                    WF_CKPT_MANIFEST, cJSON_IsNumber(s) && !isfinite(s->valuedouble) ? "infinite" :
                    shown_value(s, v, sizeof v), s ? "" : " (a partial fp16 loss scaler state: refused)");
            return -1;
        }
        info->scale = s->valuedouble;
        if (get_int(m, "loss_scale", "hysteresis", 0, &info->hysteresis, err, errlen) ||
            get_int(m, "loss_scale", "good_steps", 0, &info->good_steps, err, errlen) ||
            get_int(m, "loss_scale", "skipped", 0, &info->skipped, err, errlen))
            return -1;
        if (info->hysteresis > INT_MAX) {
            set_err(err, errlen, "%s: loss_scale.hysteresis %ld is too large", WF_CKPT_MANIFEST,
                    info->hysteresis);
            return -1;
        }
    }
    return 0;
}

/* A safetensors file's metadata key, parsed strictly, equals want. */
static int meta_count(const wf_st_file *f, const char *shown, const char *key, long want,
                      int required, char *err, size_t errlen)
{
    const char *v = wf_st_meta(f, key);
    long got;
    if (!v && !required)
        return 0;
    if (!v || wf_parse_count(v, &got) != 0) {
        set_err(err, errlen, "%s: metadata %s is %s%s%s, not a non-negative integer", shown, key,
                v ? "\"" : "", v ? v : "missing", v ? "\"" : "");
        return -1;
    }
    if (got != want) {
        set_err(err, errlen, "%s: metadata %s is %ld but the manifest says %ld (files from "
                "different checkpoints?)", shown, key, got, want);
        return -1;
    }
    return 0;
}

static int check_meta(const wf_st_file *f, const char *shown, const wf_ckpt_info *info, char *err,
                      size_t errlen)
{
    if (meta_count(f, shown, "weft_step", info->step, 1, err, errlen) ||
        meta_count(f, shown, "weft_samples_seen", info->samples_seen, 1, err, errlen))
        return -1;
    const char *model = wf_st_meta(f, "weft_model");
    if (!model || strcmp(model, info->model) != 0) {
        set_err(err, errlen, "%s: metadata weft_model is \"%s\" but the manifest says \"%s\"", shown,
                model ? model : "(missing)", info->model);
        return -1;
    }
    static const char *keys[4] = { "weft_loss_scale", "weft_scale_hysteresis",
                                   "weft_scale_good_steps", "weft_skipped_steps" };
    int present = 0;
    for (int k = 0; k < 4; k++)
        present += wf_st_meta(f, keys[k]) != NULL;
    if (present != 0 && present != 4) {
        set_err(err, errlen, "%s: metadata holds %d of the 4 fp16 loss scaler fields (a partial "
                "scaler state: refused)", shown, present);
        return -1;
    }
    if ((present == 4) != info->has_scaler) {
        set_err(err, errlen, "%s: metadata %s a loss scaler state but the manifest %s", shown,
                present ? "holds" : "lacks", info->has_scaler ? "has one" : "has none");
        return -1;
    }
    if (!present)
        return 0;
    const char *s = wf_st_meta(f, keys[0]);
    char *end;
    double scale = strtod(s, &end);
    if (*end || end == s || !isfinite(scale) || !(scale > 0) || scale != info->scale) {
        set_err(err, errlen, "%s: metadata weft_loss_scale is \"%s\": not a finite positive number "
                "equal to the manifest's %.17g", shown, s, info->scale);
        return -1;
    }
    if (meta_count(f, shown, keys[1], info->hysteresis, 1, err, errlen) ||
        meta_count(f, shown, keys[2], info->good_steps, 1, err, errlen) ||
        meta_count(f, shown, keys[3], info->skipped, 1, err, errlen))
        return -1;
    return 0;
}

static int check_tensors(const wf_st_file *f, const char *shown, const cJSON *want, char *err,
                         size_t errlen)
{
    if (!cJSON_IsObject(want)) {
        set_err(err, errlen, "%s: the manifest lists no tensors for it", shown);
        return -1;
    }
    for (const cJSON *t = want->child; t; t = t->next) {
        long shape[WF_ST_FILE_MAX_NDIM];
        int nd = wf_st_shape(f, t->string, shape, WF_ST_FILE_MAX_NDIM);
        if (nd < 0) {
            set_err(err, errlen, "%s: tensor %s is missing (the manifest lists it)", shown, t->string);
            return -1;
        }
        const cJSON *sh = cJSON_GetObjectItemCaseSensitive(t, "shape");
        int same = cJSON_IsArray(sh) && cJSON_GetArraySize(sh) == nd;
        for (int d = 0; same && d < nd; d++) {
            const cJSON *x = cJSON_GetArrayItem(sh, d);
            same = cJSON_IsNumber(x) && x->valuedouble == (double)shape[d];
        }
        if (!same) {
            char have[160] = "[", w[64];
            for (int d = 0; d < nd; d++)
                snprintf(have + strlen(have), sizeof have - strlen(have), d ? ",%ld" : "%ld", shape[d]);
            strncat(have, "]", sizeof have - strlen(have) - 1);
            set_err(err, errlen, "%s: tensor %s has shape %s but the manifest says %s", shown,
                    t->string, have, shown_value(sh, w, sizeof w));
            return -1;
        }
        size_t bytes;
        const unsigned char *data = wf_st_data(f, t->string, &bytes);
        for (size_t i = 0; i + 4 <= bytes; i += 4) {
            uint32_t u = (uint32_t)data[i] | (uint32_t)data[i + 1] << 8 |
                         (uint32_t)data[i + 2] << 16 | (uint32_t)data[i + 3] << 24;
            if ((u & 0x7f800000u) == 0x7f800000u) {  /* exponent all ones: inf or NaN */
                set_err(err, errlen, "%s: tensor %s holds %s at element %zu (refused: a diverged "
                        "or damaged checkpoint)", shown, t->string, u & 0x7fffffu ? "NaN" :
                        "an infinity", i / 4);
                return -1;
            }
        }
        const cJSON *c = cJSON_GetObjectItemCaseSensitive(t, "crc32c");
        char hex[9];
        hex8(hex, wf_crc32c(0, data, bytes));
        if (!cJSON_IsString(c) || strcmp(c->valuestring, hex) != 0) {
            set_err(err, errlen, "%s: tensor %s: checksum mismatch (crc32c %s, the manifest says %s): "
                    "its data changed", shown, t->string, hex, cJSON_IsString(c) ? c->valuestring : "none");
            return -1;
        }
    }
    int listed = cJSON_GetArraySize(want);
    if (wf_st_count(f) != listed) {
        for (int i = 0; i < wf_st_count(f); i++)
            if (!cJSON_GetObjectItemCaseSensitive(want, wf_st_name(f, i))) {
                set_err(err, errlen, "%s: tensor %s is not in the manifest", shown, wf_st_name(f, i));
                return -1;
            }
        set_err(err, errlen, "%s: %d tensors, the manifest lists %d", shown, wf_st_count(f), listed);
        return -1;
    }
    return 0;
}

static int check_file(const char *dir, const cJSON *entry, const wf_ckpt_info *info, char *err,
                      size_t errlen)
{
    const char *name = entry->string;
    char path[PATH_MAX], v[64];
    if (!*name || strchr(name, '/') || name[0] == '.') {
        set_err(err, errlen, "%s: lists the file \"%s\", which is not a plain file name (refused)",
                WF_CKPT_MANIFEST, name);
        return -1;
    }
    if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s", dir, name) != 0)
        return -1;
    struct stat st;
    int fd = open_regular(path, name, &st, err, errlen);  /* no link, no FIFO: nothing blocks */
    if (fd < 0)
        return -1;
    close(fd);
    const cJSON *b = cJSON_GetObjectItemCaseSensitive(entry, "bytes");
    if (!cJSON_IsNumber(b) || b->valuedouble != (double)st.st_size) {
        set_err(err, errlen, "%s: %lld bytes but the manifest says %s (truncated or replaced)", name,
                (long long)st.st_size, shown_value(b, v, sizeof v));
        return -1;
    }
    if (is_safetensors(name)) {
        wf_st_file *f;
        char e[600];
        if (wf_st_open(&f, path, e, sizeof e) != 0) {
            set_err(err, errlen, "%s: %s", name, e);
            return -1;
        }
        int rc = check_meta(f, name, info, err, errlen) ||
                 check_tensors(f, name, cJSON_GetObjectItemCaseSensitive(entry, "tensors"), err, errlen);
        wf_st_close(f);
        if (rc)
            return -1;
    }
    uint32_t crc;
    long size;
    char hex[9];
    if (crc_file(path, name, &crc, &size, err, errlen) != 0)
        return -1;
    hex8(hex, crc);
    const cJSON *c = cJSON_GetObjectItemCaseSensitive(entry, "crc32c");
    if (!cJSON_IsString(c) || strcmp(c->valuestring, hex) != 0) {
        set_err(err, errlen, "%s: checksum mismatch (crc32c %s, the manifest says %s): the file "
                "changed", name, hex, cJSON_IsString(c) ? c->valuestring : "none");
        return -1;
    }
    return 0;
}

int wf_ckpt_verify(const char *dir, wf_ckpt_info *info, char *err, size_t errlen)
{
    char path[PATH_MAX];
    struct stat st;
    memset(info, 0, sizeof *info);
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s: %s", dir, errno == ENOENT ? "no such checkpoint folder" :
                "not a checkpoint folder");
        return -1;
    }
    if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s", dir, WF_CKPT_MANIFEST) != 0)
        return -1;
    char *text = read_small(path, WF_CKPT_MANIFEST, err, errlen);
    if (!text) {
        if (errno == ENOENT || (err && strstr(err, "missing")))
            set_err(err, errlen, "%s: missing (not a checkpoint Weft wrote, or one from before "
                    "manifests: it cannot be verified)", WF_CKPT_MANIFEST);
        return -1;
    }
    cJSON *m = cJSON_Parse(text);
    free(text);
    if (!m) {
        set_err(err, errlen, "%s: does not parse as JSON", WF_CKPT_MANIFEST);
        return -1;
    }
    int rc = parse_manifest(m, info, err, errlen);
    const cJSON *files = cJSON_GetObjectItemCaseSensitive(m, "files");
    if (rc == 0 && !cJSON_IsObject(files)) {
        set_err(err, errlen, "%s: files is not an object", WF_CKPT_MANIFEST);
        rc = -1;
    }
    if (rc == 0 && !cJSON_GetObjectItemCaseSensitive(files, "config.json")) {
        set_err(err, errlen, "%s: does not list config.json", WF_CKPT_MANIFEST);
        rc = -1;
    }
    /* the model and the optimizer state: one file each, or (pp > 1) a
     * Hugging Face sharded set, its index and every shard listed */
    static const char *bases[] = { "model", "optimizer" };
    for (int i = 0; rc == 0 && i < 2; i++) {
        char one[64], index[64];
        snprintf(one, sizeof one, "%s.safetensors", bases[i]);
        snprintf(index, sizeof index, "%s.safetensors.index.json", bases[i]);
        if (!cJSON_GetObjectItemCaseSensitive(files, one) && !cJSON_GetObjectItemCaseSensitive(files, index)) {
            set_err(err, errlen, "%s: lists neither %s nor %s", WF_CKPT_MANIFEST, one, index);
            rc = -1;
        }
    }
    for (const cJSON *f = rc == 0 ? files->child : NULL; f && rc == 0; f = f->next)
        rc = check_file(dir, f, info, err, errlen);
    for (int i = 0; rc == 0 && i < 2; i++) {
        wf_ckpt_set *set;
        if (wf_ckpt_set_open_in(&set, dir, bases[i], err, errlen) != 0) {
            rc = -1;
            break;
        }
        for (int j = 0; rc == 0 && j < wf_ckpt_set_files(set); j++)
            if (!cJSON_GetObjectItemCaseSensitive(files, wf_ckpt_set_file_name(set, j))) {
                set_err(err, errlen, "%s: does not list %s, a file of the checkpoint", WF_CKPT_MANIFEST,
                        wf_ckpt_set_file_name(set, j));
                rc = -1;
            }
        wf_ckpt_set_close(set);
    }
    cJSON_Delete(m);
    return rc;
}

int wf_ckpt_config_check(const char *dir, const char *config_text, char *err, size_t errlen)
{
    char path[PATH_MAX], a[64], b[64];
    if (wf_path_fmt(path, sizeof path, err, errlen, "%s/config.json", dir) != 0)
        return -1;
    char *text = read_small(path, "config.json", err, errlen);
    if (!text)
        return -1;
    cJSON *have = cJSON_Parse(text), *want = cJSON_Parse(config_text ? config_text : "");
    free(text);
    int rc = 0;
    if (!cJSON_IsObject(have)) {
        set_err(err, errlen, "config.json: does not parse as a JSON object");
        rc = -1;
    } else if (!cJSON_IsObject(want)) {
        set_err(err, errlen, "config.json: the program's own config does not parse (recompile it)");
        rc = -1;
    }
    for (const cJSON *w = rc ? NULL : want->child; w && rc == 0; w = w->next) {
        if (!strcmp(w->string, "torch_dtype"))
            continue;
        const cJSON *h = cJSON_GetObjectItemCaseSensitive(have, w->string);
        if (!h || !cJSON_Compare(h, w, 1)) {
            set_err(err, errlen, "config.json: %s is %s in the checkpoint but %s in this program "
                    "(a different model)", w->string, shown_value(h, a, sizeof a),
                    shown_value(w, b, sizeof b));
            rc = -1;
        }
    }
    for (const cJSON *h = rc ? NULL : have->child; h && rc == 0; h = h->next)
        if (strcmp(h->string, "torch_dtype") && !cJSON_GetObjectItemCaseSensitive(want, h->string)) {
            set_err(err, errlen, "config.json: %s is not a field of this program's config",
                    h->string);
            rc = -1;
        }
    cJSON_Delete(have);
    cJSON_Delete(want);
    return rc;
}
