/* ckpt_shards.c: a checkpoint's tensors as one safetensors file or as a
 * Hugging Face sharded set (see ckpt_shards.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "ckpt_shards.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_folder.h"
#include "ckpt_manifest.h"
#include "err_text.h"

#define INDEX_SUFFIX ".safetensors.index.json"
#define MAX_INDEX_BYTES (256L << 20)  /* a million tensors' names, with room */

struct wf_ckpt_set {
    int n;               /* files */
    wf_st_file **files;
    char **names;         /* the files' names in their folder */
    char path[PATH_MAX];  /* the file, or the index */
};

static int ends_with(const char *s, const char *end) {
    size_t a = strlen(s), b = strlen(end);
    return a >= b && strcmp(s + a - b, end) == 0;
}

static int regular_file(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* ---- writing the index ------------------------------------------------------ */

int wf_ckpt_index_write(const char *dir, const char *base, int n, double *total, char *err, size_t errlen) {
    char path[PATH_MAX], name[128], e[PATH_MAX + 512];
    cJSON *root = cJSON_CreateObject(), *meta = cJSON_AddObjectToObject(root, "metadata");
    cJSON *map = cJSON_AddObjectToObject(root, "weight_map");
    double bytes_all = 0;
    int rc = map ? 0 : -1;
    if (rc) set_err(err, errlen, "%s/%s%s: out of memory", dir, base, INDEX_SUFFIX);
    for (int s = 0; rc == 0 && s < n; s++) {
        wf_ckpt_shard_name(name, sizeof name, base, s, n);
        wf_st_file *f;
        if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s", dir, name) != 0) {
            rc = -1;
            break;
        }
        if (wf_st_open(&f, path, e, sizeof e) != 0) {
            set_err(err, errlen, "%s", e);
            rc = -1;
            break;
        }
        for (int i = 0; i < wf_st_count(f) && rc == 0; i++) {
            const char *t = wf_st_name(f, i);
            const cJSON *was = cJSON_GetObjectItemCaseSensitive(map, t);
            if (was) {  /* one name, one shard: a loader would take either */
                set_err(err, errlen, "%s: tensor %s is also in %s (every tensor belongs to one shard)", name, t,
                        was->valuestring);
                rc = -1;
                break;
            }
            size_t b;
            wf_st_data(f, t, &b);
            bytes_all += (double)b;
            if (!cJSON_AddStringToObject(map, t, name)) {
                set_err(err, errlen, "%s: out of memory", name);
                rc = -1;
            }
        }
        wf_st_close(f);
    }
    if (rc == 0) cJSON_AddNumberToObject(meta, "total_size", bytes_all);
    char *text = rc == 0 ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    if (rc != 0) return -1;
    if (!text) {
        set_err(err, errlen, "%s/%s%s: out of memory", dir, base, INDEX_SUFFIX);
        return -1;
    }
    int wrote = wf_path_fmt(path, sizeof path, err, errlen, "%s/%s%s", dir, base, INDEX_SUFFIX) == 0 &&
                wf_ckpt_write_text(path, text, err, errlen) == 0;
    free(text);
    if (!wrote) return -1;
    if (total) *total = bytes_all;
    return 0;
}

/* ---- reading ------------------------------------------------------------------- */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The set an index names: its shards opened and checked against it. */
static int open_index(wf_ckpt_set *s, const char *index, char *err, size_t errlen) {
    char dir[PATH_MAX], path[PATH_MAX], e[PATH_MAX + 512];
    const char *shown = strrchr(index, '/') ? strrchr(index, '/') + 1 : index;
    if (wf_parent_of(index, dir, sizeof dir, err, errlen) != 0) return -1;
    char *text = wf_ckpt_read_text(index, shown, MAX_INDEX_BYTES, err, errlen);
    if (!text) return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(root, "metadata");
    const cJSON *total = cJSON_GetObjectItemCaseSensitive(meta, "total_size");
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "weight_map");
    int rc = 0;
    if (!cJSON_IsObject(root)) set_err(err, errlen, "%s: does not parse as a JSON object", shown), rc = -1;
    else if (!cJSON_IsObject(map) || !map->child)
        set_err(err, errlen, "%s: weight_map is missing or empty", shown), rc = -1;
    else if (!cJSON_IsNumber(total) || total->valuedouble < 0)
        set_err(err, errlen, "%s: metadata.total_size is missing or not a size", shown), rc = -1;
    /* the shard files, each once, in name order */
    int listed = cJSON_GetArraySize(map);
    const char **names = rc ? NULL : calloc((size_t)listed, sizeof *names);
    int n = 0;
    for (const cJSON *t = names ? map->child : NULL; t && rc == 0; t = t->next) {
        const char *file = cJSON_IsString(t) ? t->valuestring : NULL;
        if (!file || !*file || strchr(file, '/') || file[0] == '.' || !ends_with(file, ".safetensors")) {
            set_err(err, errlen, "%s: tensor %s maps to %s, not a .safetensors file in this folder", shown,
                    t->string, file ? file : "a non-string");
            rc = -1;
            break;
        }
        int seen = 0;
        for (int i = 0; i < n && !seen; i++) seen = strcmp(names[i], file) == 0;
        if (!seen) names[n++] = file;
    }
    if (names) qsort(names, (size_t)n, sizeof *names, cmp_str);
    if (rc == 0 && (!(s->files = calloc((size_t)n, sizeof *s->files)) ||
                    !(s->names = calloc((size_t)n, sizeof *s->names)))) {
        set_err(err, errlen, "%s: out of memory", shown);
        rc = -1;
    }
    for (int i = 0; rc == 0 && i < n; i++) {  /* every shard there, before any is read */
        if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s", dir, names[i]) != 0) {
            rc = -1;
        } else if (!regular_file(path)) {
            set_err(err, errlen, "%s: lists the shard %s, which is missing or not a regular file", shown, names[i]);
            rc = -1;
        }
    }
    double bytes = 0;
    int in_files = 0;
    for (int i = 0; rc == 0 && i < n; i++) {
        if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s", dir, names[i]) != 0) {
            rc = -1;
            break;
        }
        if (wf_st_open(&s->files[i], path, e, sizeof e) != 0) {
            set_err(err, errlen, "%s", e);
            rc = -1;
            break;
        }
        s->n = i + 1;
        s->names[i] = strdup(names[i]);
        for (int k = 0; k < wf_st_count(s->files[i]); k++, in_files++) {
            const char *t = wf_st_name(s->files[i], k);
            const cJSON *to = cJSON_GetObjectItemCaseSensitive(map, t);
            if (!to || strcmp(to->valuestring, names[i]) != 0) {
                set_err(err, errlen, "%s: holds tensor %s, which %s %s%s", names[i], t, shown,
                        to ? "maps to " : "does not list", to ? to->valuestring : "");
                rc = -1;
                break;
            }
            size_t b;
            wf_st_data(s->files[i], t, &b);
            bytes += (double)b;
        }
    }
    if (rc == 0 && in_files != listed) {  /* each listed name was found in no shard (names are distinct) */
        for (const cJSON *t = map->child; t; t = t->next)
            if (!wf_ckpt_set_file(s, t->string)) {
                set_err(err, errlen, "%s: lists tensor %s in %s, which does not hold it", shown, t->string,
                        t->valuestring);
                break;
            }
        rc = -1;
    }
    if (rc == 0 && bytes != total->valuedouble) {
        set_err(err, errlen, "%s: total_size is %.0f but its shards hold %.0f bytes of tensors", shown,
                total->valuedouble, bytes);
        rc = -1;
    }
    free(names);
    cJSON_Delete(root);
    return rc;
}

int wf_ckpt_set_open(wf_ckpt_set **out, const char *path, char *err, size_t errlen) {
    *out = NULL;
    wf_ckpt_set *s = calloc(1, sizeof *s);
    char index[PATH_MAX];
    if (!s) {
        set_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc;
    /* BASE.safetensors absent and BASE.safetensors.index.json present: the set */
    if (ends_with(path, ".safetensors") && !regular_file(path) &&
        snprintf(index, sizeof index, "%.*s%s", (int)(strlen(path) - 12), path, INDEX_SUFFIX) < (int)sizeof index &&
        regular_file(index))
        path = index;
    snprintf(s->path, sizeof s->path, "%s", path);
    if (ends_with(path, ".index.json")) {
        rc = open_index(s, path, err, errlen);
    } else {
        const char *shown = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
        s->files = calloc(1, sizeof *s->files);
        s->names = calloc(1, sizeof *s->names);
        rc = s->files && s->names ? wf_st_open(&s->files[0], path, err, errlen) : -1;
        if (rc == 0) s->names[0] = strdup(shown);
        if (rc == 0) s->n = 1;
    }
    if (rc != 0) {
        wf_ckpt_set_close(s);
        return -1;
    }
    *out = s;
    return 0;
}

int wf_ckpt_set_open_in(wf_ckpt_set **s, const char *dir, const char *base, char *err, size_t errlen) {
    char path[PATH_MAX];
    if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s.safetensors", dir, base) != 0) return -1;
    return wf_ckpt_set_open(s, path, err, errlen);
}

int wf_ckpt_set_count(const wf_ckpt_set *s) {
    int n = 0;
    for (int i = 0; i < s->n; i++) n += wf_st_count(s->files[i]);
    return n;
}

const char *wf_ckpt_set_name(const wf_ckpt_set *s, int i) {
    for (int f = 0; f < s->n && i >= 0; f++) {
        int here = wf_st_count(s->files[f]);
        if (i < here) return wf_st_name(s->files[f], i);
        i -= here;
    }
    return NULL;
}

const wf_st_file *wf_ckpt_set_file(const wf_ckpt_set *s, const char *name) {
    size_t bytes;
    for (int f = 0; f < s->n; f++)
        if (wf_st_data(s->files[f], name, &bytes)) return s->files[f];
    return NULL;
}

const wf_st_file *wf_ckpt_set_first(const wf_ckpt_set *s) { return s->n ? s->files[0] : NULL; }

const char *wf_ckpt_set_path(const wf_ckpt_set *s) { return s->path; }

int wf_ckpt_set_files(const wf_ckpt_set *s) { return s->n; }

const char *wf_ckpt_set_file_name(const wf_ckpt_set *s, int i) {
    return i >= 0 && i < s->n && s->names[i] ? s->names[i] : "";
}

void wf_ckpt_set_close(wf_ckpt_set *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        wf_st_close(s->files[i]);
        free(s->names[i]);
    }
    free(s->files);
    free(s->names);
    free(s);
}
