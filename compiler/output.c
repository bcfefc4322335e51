/* output.c: writing files and folders without destroying anything (output.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "output.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "version.h"
#include "err_text.h"

#define MARKER_HEAD "weft generated folder 1"

int wf_path(char *buf, size_t n, char *err, size_t errlen, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) {
        set_err(err, errlen, "path too long (%d bytes, at most %zu): %.60s...", k, n - 1, buf);
        if (n) buf[0] = 0;
        return -1;
    }
    return 0;
}

/* The permission bits a plain fopen would give (mode less the umask). */
static mode_t with_umask(int mode) {
    mode_t m = umask(0);
    umask(m);
    return (mode_t)mode & ~m;
}

/* PATH without trailing slashes, refused when it names no entry of its own
 * ("", ".", "..", "/") or leaves no room for a temporary suffix. */
static int target_name(const char *path, char *out, char *err, size_t errlen) {
    if (wf_path(out, PATH_MAX - 16, err, errlen, "%s", path) != 0) return -1;
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/') out[--n] = 0;
    const char *base = strrchr(out, '/');
    base = base ? base + 1 : out;
    if (!*base || strcmp(base, ".") == 0 || strcmp(base, "..") == 0) {
        set_err(err, errlen, "%s: not a name weft can write to (give a file or folder name)", path);
        return -1;
    }
    return 0;
}

/* Syncs the folder holding path (its entries: a rename there). */
static int sync_parent(const char *path, char *err, size_t errlen) {
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    if (!slash) strcpy(dir, ".");
    else if (slash == path) strcpy(dir, "/");
    else if (wf_path(dir, sizeof dir, err, errlen, "%.*s", (int)(slash - path), path) != 0) return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL)) {
        set_err(err, errlen, "cannot sync the folder %s: %s", dir, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* ---- files ---------------------------------------------------------------- */

int wf_outfile_open(wf_outfile *o, const char *path, int mode, char *err, size_t errlen) {
    o->f = NULL;
    o->tmp[0] = 0;
    if (target_name(path, o->path, err, errlen) != 0) return -1;
    struct stat st;
    if (lstat(o->path, &st) == 0 && S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s is a folder; weft writes a file there only in place of a file", o->path);
        return -1;
    }
    if (wf_path(o->tmp, sizeof o->tmp, err, errlen, "%s.tmp-XXXXXX", o->path) != 0) return -1;
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        set_err(err, errlen, "cannot create a temporary file next to %s: %s", o->path, strerror(errno));
        o->tmp[0] = 0;
        return -1;
    }
    if (fchmod(fd, with_umask(mode)) != 0 || !(o->f = fdopen(fd, "wb"))) {
        set_err(err, errlen, "cannot write %s: %s", o->tmp, strerror(errno));
        close(fd);
        wf_outfile_abort(o);
        return -1;
    }
    return 0;
}

void wf_outfile_abort(wf_outfile *o) {
    if (o->f) fclose(o->f);
    o->f = NULL;
    if (o->tmp[0]) unlink(o->tmp);
    o->tmp[0] = 0;
}

int wf_outfile_commit(wf_outfile *o, char *err, size_t errlen) {
    int bad = ferror(o->f) || fflush(o->f) != 0 || fsync(fileno(o->f)) != 0;
    int e = errno;
    if (fclose(o->f) != 0 && !bad) { bad = 1; e = errno; }
    o->f = NULL;
    if (!bad && rename(o->tmp, o->path) != 0) { bad = 1; e = errno; }
    if (bad) {
        set_err(err, errlen, "cannot write %s: %s", o->path, strerror(e ? e : EIO));
        wf_outfile_abort(o);
        return -1;
    }
    o->tmp[0] = 0;
    return sync_parent(o->path, err, errlen);
}

/* ---- what is in an existing folder -------------------------------------- */

typedef struct {
    char **names;  /* the files weft wrote there */
    int n, cap;
} name_list;

static void names_free(name_list *l) {
    for (int i = 0; i < l->n; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}

static int names_add(name_list *l, const char *s, size_t len) {
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        char **g = realloc(l->names, sizeof(char *) * (size_t)cap);
        if (!g) return -1;
        l->names = g;
        l->cap = cap;
    }
    char *c = strndup(s, len);
    if (!c) return -1;
    l->names[l->n++] = c;
    return 0;
}

static int names_has(const name_list *l, const char *s) {
    for (int i = 0; i < l->n; i++)
        if (strcmp(l->names[i], s) == 0) return 1;
    return 0;
}

/* A name the marker may list: one entry of the folder itself. */
static int plain_entry(const char *s, size_t len) {
    return len > 0 && len < 256 && !memchr(s, '/', len) && !memchr(s, 0, len) &&
           !(len == 1 && s[0] == '.') && !(len == 2 && s[0] == '.' && s[1] == '.') &&
           !(len == strlen(WF_MARKER) && memcmp(s, WF_MARKER, len) == 0);
}

/* Reads at most max bytes of a regular file (not through a link) in dirfd. */
static char *read_small(int dirfd, const char *name, size_t max) {
    int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return NULL;
    struct stat st;
    char *buf = NULL;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (size_t)st.st_size <= max &&
        (buf = malloc((size_t)st.st_size + 1))) {
        ssize_t k = read(fd, buf, (size_t)st.st_size);
        if (k != st.st_size) {
            free(buf);
            buf = NULL;
        } else {
            buf[k] = 0;
        }
    }
    close(fd);
    return buf;
}

/* The marker's file list; -1 if there is no valid marker. */
static int read_marker(int dirfd, name_list *l) {
    char *text = read_small(dirfd, WF_MARKER, 1 << 20);
    if (!text) return -1;
    int rc = -1;
    size_t head = strlen(MARKER_HEAD);
    if (strncmp(text, MARKER_HEAD, head) == 0 && text[head] == '\n') {
        rc = 0;
        for (const char *line = text + head + 1; *line && rc == 0;) {
            const char *end = strchr(line, '\n');
            size_t len = end ? (size_t)(end - line) : strlen(line);
            if (len && line[0] != '#' && plain_entry(line, len)) rc = names_add(l, line, len);
            line += len + (end != NULL);
        }
    }
    free(text);
    return rc;
}

/* The names weft's compile writes (a marker may claim others: those are
 * never removed, only moved). */
static int weft_name(const char *s) {
    if (!strcmp(s, "launch.sh") || !strcmp(s, "ranks.txt") || !strcmp(s, "CMakeLists.txt") ||
        !strcmp(s, "config.json") || !strcmp(s, "job.slurm"))
        return 1;
    if (strncmp(s, "stage", 5) != 0) return 0;
    const char *q = s + 5;
    if (*q < '0' || *q > '9') return 0;
    while (*q >= '0' && *q <= '9') q++;
    return !strcmp(q, ".c") || !strcmp(q, ".cu");
}

enum { TARGET_ABSENT, TARGET_EMPTY, TARGET_WEFT };

/* What PATH is: absent, an empty folder, or a folder weft wrote (with the
 * list of its files); -1 with err for anything else. */
static int inspect_target(const char *path, name_list *l, char *err, size_t errlen) {
    memset(l, 0, sizeof *l);
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT) return TARGET_ABSENT;
        set_err(err, errlen, "cannot look at %s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s exists and is not a folder weft compile wrote (it is %s); nothing "
                "was changed (choose another -o folder, or move it away yourself)", path,
                S_ISLNK(st.st_mode) ? "a symbolic link" : "not a folder");
        return -1;
    }
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        set_err(err, errlen, "cannot read the folder %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    int kind = read_marker(fd, l) == 0 ? TARGET_WEFT : -1;
    if (kind < 0) {
        /* no marker: empty, or written by a weft from before the marker (its
         * launch.sh and ranks.txt headers); other entries there are moved */
        names_free(l);
        char *launch = read_small(fd, "launch.sh", 1 << 20), *ranks = read_small(fd, "ranks.txt", 1 << 26);
        int legacy = launch && strncmp(launch, "#!/bin/sh\n# Generated by weft ", 30) == 0 && ranks &&
                     strncmp(ranks, "# rank table for plan ", 22) == 0;
        free(launch);
        free(ranks);
        int entries = 0, bad = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            entries++;
            if (weft_name(e->d_name) && names_add(l, e->d_name, strlen(e->d_name)) != 0) bad = 1;
        }
        if (entries == 0) kind = TARGET_EMPTY;
        else if (legacy && !bad) kind = TARGET_WEFT;
        else names_free(l);
    }
    closedir(d);
    if (kind < 0)
        set_err(err, errlen, "%s exists and is not a folder weft compile wrote (it has no %s file); "
                "nothing was changed (choose another -o folder, or move it away yourself)", path, WF_MARKER);
    return kind;
}

/* ---- folders -------------------------------------------------------------- */

int wf_outdir_begin(wf_outdir *d, const char *path, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    if (target_name(path, d->path, err, errlen) != 0) return -1;
    name_list old;
    int kind = inspect_target(d->path, &old, err, errlen);
    names_free(&old);
    if (kind < 0) return -1;
    if (wf_path(d->tmp, sizeof d->tmp, err, errlen, "%s.tmp-XXXXXX", d->path) != 0) return -1;
    if (!mkdtemp(d->tmp)) {
        set_err(err, errlen, "cannot create a folder next to %s: %s", d->path, strerror(errno));
        d->tmp[0] = 0;
        return -1;
    }
    return 0;
}

FILE *wf_outdir_create(wf_outdir *d, const char *name, int mode, char *err, size_t errlen) {
    char file[PATH_MAX];
    if (!plain_entry(name, strlen(name)) || d->n_files == WF_OUTDIR_MAX_FILES) {
        set_err(err, errlen, "internal: cannot add %s to %s", name, d->path);
        return NULL;
    }
    if (wf_path(file, sizeof file, err, errlen, "%s/%s", d->tmp, name) != 0) return NULL;
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, with_umask(mode));
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        set_err(err, errlen, "cannot write %s: %s", file, strerror(errno));
        if (fd >= 0) close(fd);
        return NULL;
    }
    d->files[d->n_files] = strdup(name);
    if (!d->files[d->n_files]) {
        fclose(f);
        unlink(file);
        set_err(err, errlen, "out of memory");
        return NULL;
    }
    d->n_files++;
    return f;
}

static void outdir_free(wf_outdir *d) {
    for (int i = 0; i < d->n_files; i++) free(d->files[i]);
    d->n_files = 0;
    d->tmp[0] = 0;
}

void wf_outdir_abort(wf_outdir *d) {
    if (d->tmp[0]) {
        int fd = open(d->tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
        if (fd >= 0) {
            for (int i = 0; i < d->n_files; i++) unlinkat(fd, d->files[i], 0);
            unlinkat(fd, WF_MARKER, 0);
            close(fd);
        }
        rmdir(d->tmp);  /* only if empty: nothing else was ever in it */
    }
    outdir_free(d);
}

static int write_marker(wf_outdir *d, char *err, size_t errlen) {
    char file[PATH_MAX];
    if (wf_path(file, sizeof file, err, errlen, "%s/%s", d->tmp, WF_MARKER) != 0) return -1;
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, with_umask(0666));
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
        if (fd >= 0) close(fd);
        set_err(err, errlen, "cannot write %s: %s", file, strerror(errno));
        return -1;
    }
    fprintf(f, "%s\n# Written by weft %s.  `weft compile -o` replaces this folder only while this\n"
            "# file is here; it removes the files listed below and moves anything else\n"
            "# (a build/ folder, your own files) into the new folder.\n", MARKER_HEAD, WEFT_VERSION);
    for (int i = 0; i < d->n_files; i++) fprintf(f, "%s\n", d->files[i]);
    int bad = ferror(f) || fflush(f) != 0 || fsync(fileno(f)) != 0;
    if (fclose(f) != 0) bad = 1;
    if (bad) set_err(err, errlen, "cannot write %s: %s", file, strerror(errno));
    return bad ? -1 : 0;
}

static int sync_dir(const char *path, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0 || (fsync(fd) != 0 && errno != EINVAL)) {
        set_err(err, errlen, "cannot sync the folder %s: %s", path, strerror(errno));
        if (fd >= 0) close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* After the swap: the old folder (at aside) gives the new one (at path) every
 * entry weft did not write; weft's own files go; the folder goes if empty. */
static void settle_old(const char *aside, const char *path, const name_list *old) {
    int from = open(aside, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    int to = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    DIR *dir = from >= 0 ? fdopendir(dup(from)) : NULL;
    int kept = 0;
    if (dir && to >= 0) {
        struct dirent *e;
        while ((e = readdir(dir))) {
            const char *n = e->d_name;
            if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, WF_MARKER)) continue;
            if (names_has(old, n) && weft_name(n)) {
                struct stat st;
                if (fstatat(from, n, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode) &&
                    unlinkat(from, n, 0) == 0)
                    continue;
                kept = 1;
            } else if (renameat2(from, n, to, n, RENAME_NOREPLACE) != 0) {
                /* the new folder has that name (or the file system cannot) */
                kept = 1;
            }
        }
    } else {
        kept = 1;
    }
    if (dir) closedir(dir);
    if (!kept && from >= 0 && unlinkat(from, WF_MARKER, 0) != 0 && errno != ENOENT) kept = 1;
    if (from >= 0) close(from);
    if (to >= 0) close(to);
    if (kept || rmdir(aside) != 0)
        fprintf(stderr, "weft: note: the previous %s held entries that could not be moved into the "
                "new one; they are kept in %s\n", path, aside);
}

int wf_outdir_commit(wf_outdir *d, char *err, size_t errlen) {
    name_list old = { 0 };
    int rc = -1;
    if (write_marker(d, err, errlen) != 0) goto fail;
    if (chmod(d->tmp, with_umask(0777)) != 0 || sync_dir(d->tmp, err, errlen) != 0) {
        set_err(err, errlen, "cannot finish %s: %s", d->tmp, strerror(errno));
        goto fail;
    }
    /* again, now: the folder may have changed while the plan compiled */
    int kind = inspect_target(d->path, &old, err, errlen);
    if (kind < 0) goto fail;
    if (kind != TARGET_WEFT) {
        /* absent, or an empty folder, which rename replaces in one step */
        if (rename(d->tmp, d->path) != 0) {
            set_err(err, errlen, "cannot rename %s to %s: %s", d->tmp, d->path, strerror(errno));
            goto fail;
        }
        outdir_free(d);
        rc = sync_parent(d->path, err, errlen);
        goto done;
    }
    char aside[PATH_MAX];
    if (renameat2(AT_FDCWD, d->tmp, AT_FDCWD, d->path, RENAME_EXCHANGE) == 0) {
        strcpy(aside, d->tmp);  /* the old folder now lies where the new one was written */
    } else if (errno == EINVAL || errno == ENOSYS || errno == EOPNOTSUPP) {
        /* no exchange here: the old folder onto an empty placeholder, then the new one in */
        if (wf_path(aside, sizeof aside, err, errlen, "%s.old-XXXXXX", d->path) != 0) goto fail;
        if (!mkdtemp(aside)) {
            set_err(err, errlen, "cannot create a folder next to %s: %s", d->path, strerror(errno));
            goto fail;
        }
        if (rename(d->path, aside) != 0) {
            set_err(err, errlen, "cannot move the previous %s aside: %s", d->path, strerror(errno));
            rmdir(aside);
            goto fail;
        }
        if (rename(d->tmp, d->path) != 0) {
            set_err(err, errlen, "cannot rename %s to %s: %s", d->tmp, d->path, strerror(errno));
            rename(aside, d->path);
            goto fail;
        }
    } else {
        set_err(err, errlen, "cannot swap %s in for %s: %s", d->tmp, d->path, strerror(errno));
        goto fail;
    }
    outdir_free(d);
    settle_old(aside, d->path, &old);
    rc = sync_dir(d->path, err, errlen) == 0 && sync_parent(d->path, err, errlen) == 0 ? 0 : -1;
    goto done;
fail:
    wf_outdir_abort(d);
done:
    names_free(&old);
    return rc;
}
