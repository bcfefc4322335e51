/* ckpt_folder.c: replacing and removing checkpoint folders safely (see
 * ckpt_folder.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* renameat2, O_DIRECTORY */
#endif
#include "ckpt_folder.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt_manifest.h"
#include "err_text.h"

int wf_path_fmt(char *out, size_t n, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(out, n, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= n) {
        set_err(err, errlen, "checkpoint path too long: %d bytes, at most %zu (it starts %.60s...)",
                k, n - 1, out);
        if (n)
            out[0] = '\0';
        return -1;
    }
    return 0;
}

int wf_parent_of(const char *dir, char *out, size_t n, char *err, size_t errlen)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')  /* "a/b/" is "a/b" */
        len--;
    size_t cut = len;
    while (cut > 0 && dir[cut - 1] != '/')
        cut--;
    if (cut == 0)
        return wf_path_fmt(out, n, err, errlen, ".");
    while (cut > 1 && dir[cut - 1] == '/')
        cut--;
    return wf_path_fmt(out, n, err, errlen, "%.*s", (int)cut, dir);
}

static const char *kind_of(mode_t m)
{
    return S_ISREG(m) ? "a file" : S_ISLNK(m) ? "a symbolic link" : S_ISFIFO(m) ? "a FIFO" :
           S_ISCHR(m) || S_ISBLK(m) ? "a device" : S_ISSOCK(m) ? "a socket" : "not a folder";
}

int wf_ckpt_folder_kind(const char *path, const char *marker, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return WF_FOLDER_ABSENT;
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode)) {
        set_err(err, errlen, "%s exists and is %s, not a checkpoint folder; nothing was changed "
                "(choose another path)", path, kind_of(st.st_mode));
        return -1;
    }
    char m[PATH_MAX];
    if (wf_path_fmt(m, sizeof m, err, errlen, "%s/%s", path, marker) != 0)
        return -1;
    if (lstat(m, &st) == 0 && S_ISREG(st.st_mode))
        return WF_FOLDER_OURS;
    DIR *d = opendir(path);
    if (!d) {
        set_err(err, errlen, "%s: cannot read the folder: %s", path, strerror(errno));
        return -1;
    }
    int entries = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            entries++;
    closedir(d);
    if (entries == 0)
        return WF_FOLDER_EMPTY;
    set_err(err, errlen, "%s exists and was not written by Weft (it has %d entr%s and no %s "
            "marker); nothing was changed: move it away or choose another path", path, entries,
            entries == 1 ? "y" : "ies", marker);
    return -1;
}

int wf_ckpt_mark(const char *path, const char *marker, char *err, size_t errlen)
{
    char m[PATH_MAX];
    if (wf_path_fmt(m, sizeof m, err, errlen, "%s/%s", path, marker) != 0)
        return -1;
    int fd = open(m, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0644);
    static const char text[] = "This folder was written by Weft; Weft may replace or remove it.\n";
    if (fd < 0 || write(fd, text, sizeof text - 1) != (ssize_t)(sizeof text - 1) || fsync(fd) != 0) {
        set_err(err, errlen, "cannot write %s: %s", m, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

int wf_ckpt_remove(const char *path, const char *marker, char *err, size_t errlen)
{
    int kind = wf_ckpt_folder_kind(path, marker, err, errlen);
    if (kind < 0 || kind == WF_FOLDER_ABSENT)
        return kind < 0 ? -1 : 0;
    DIR *d = opendir(path);
    if (!d) {
        set_err(err, errlen, "%s: cannot read the folder: %s", path, strerror(errno));
        return -1;
    }
    char f[PATH_MAX];
    int rc = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..") || !strcmp(e->d_name, marker))
            continue;
        struct stat st;
        if (wf_path_fmt(f, sizeof f, err, errlen, "%s/%s", path, e->d_name) != 0) {
            rc = -1;
            continue;
        }
        if (lstat(f, &st) != 0 || !(S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))) {
            /* a checkpoint holds files only: what else is here is not ours */
            set_err(err, errlen, "%s holds %s, which Weft did not write; it was left in place",
                    path, f);
            rc = -1;
            continue;
        }
        if (unlink(f) != 0) {
            set_err(err, errlen, "cannot remove %s: %s", f, strerror(errno));
            rc = -1;
        }
    }
    closedir(d);
    if (rc != 0)
        return -1;
    if (kind == WF_FOLDER_OURS && wf_path_fmt(f, sizeof f, err, errlen, "%s/%s", path, marker) == 0)
        unlink(f);
    if (rmdir(path) != 0) {
        set_err(err, errlen, "cannot remove the folder %s: %s", path, strerror(errno));
        return -1;
    }
    return 0;
}

void wf_ckpt_test_kill(const char *phase)
{
    const char *want = getenv("WEFT_TEST_KILL_IN_SAVE");
    if (want && strcmp(want, phase) == 0)
        raise(SIGKILL);
}

int wf_fsync_dir(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY);
    if (fd < 0 || fsync(fd) != 0) {
        set_err(err, errlen, "cannot sync the folder %s: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* dir's last component. */
static int base_of(const char *dir, char *out, size_t n)
{
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    const char *name = dir + len;
    while (name > dir && name[-1] != '/')
        name--;
    return wf_path_fmt(out, n, NULL, 0, "%.*s", (int)(dir + len - name), name);
}

/* NAME.tmp-DIGITS or NAME.old-DIGITS (name NULL: any NAME): 1, else 0. */
static int is_leftover(const char *entry, const char *name)
{
    const char *dot = strrchr(entry, '.');
    if (!dot || dot == entry || (strncmp(dot, ".tmp-", 5) != 0 && strncmp(dot, ".old-", 5) != 0))
        return 0;
    if (name && (strlen(name) != (size_t)(dot - entry) || strncmp(entry, name, strlen(name)) != 0))
        return 0;
    const char *n = dot + 5;
    if (!*n)
        return 0;
    for (; *n; n++)
        if (*n < '0' || *n > '9')
            return 0;
    return 1;
}

int wf_ckpt_find_old(const char *dir, char *out, size_t n)
{
    char parent[PATH_MAX], path[PATH_MAX], base[NAME_MAX + 1];
    if (wf_parent_of(dir, parent, sizeof parent, NULL, 0) != 0 || base_of(dir, base, sizeof base) != 0)
        return -1;
    DIR *d = opendir(parent);
    if (!d)
        return -1;
    long best = -1;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_leftover(e->d_name, base) || !strstr(e->d_name, ".old-"))
            continue;
        if (wf_path_fmt(path, sizeof path, NULL, 0, "%s/%s", parent, e->d_name) != 0 ||
            wf_ckpt_folder_kind(path, WF_CKPT_MARKER, NULL, 0) != WF_FOLDER_OURS)
            continue;
        wf_ckpt_info info;
        long pid = atol(strrchr(e->d_name, '-') + 1);
        if (pid > best && wf_ckpt_verify(path, &info, NULL, 0) == 0 &&
            wf_path_fmt(out, n, NULL, 0, "%s", path) == 0)
            best = pid;
    }
    closedir(d);
    return best >= 0 ? 0 : -1;
}

int wf_ckpt_clean_stale(const char *dir, int any_name, wf_ckpt_note note, void *arg, char *err,
                        size_t errlen)
{
    char parent[PATH_MAX], path[PATH_MAX], text[PATH_MAX + 800], restore[PATH_MAX] = "";
    if (wf_parent_of(dir, parent, sizeof parent, err, errlen) != 0)
        return -1;
    char base[NAME_MAX + 1];
    if (base_of(dir, base, sizeof base) != 0) {
        set_err(err, errlen, "%s: the folder's name is too long", dir);
        return -1;
    }
    struct stat st;
    int dir_missing = lstat(dir, &st) != 0 && errno == ENOENT;
    DIR *d = opendir(parent);
    if (!d)
        return 0;  /* no parent yet: nothing left over */
    int removed = 0;
    if (dir_missing && !any_name && wf_ckpt_find_old(dir, restore, sizeof restore) == 0) {
        if (rename(restore, dir) != 0) {
            set_err(err, errlen, "cannot rename %s back to %s: %s", restore, dir, strerror(errno));
            closedir(d);
            return -1;
        }
        snprintf(text, sizeof text, "%s was missing: restored it from %s, the complete checkpoint "
                 "an interrupted save left", dir, restore);
        if (note)
            note(arg, text);
    }
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_leftover(e->d_name, any_name ? NULL : base))
            continue;
        if (wf_path_fmt(path, sizeof path, err, errlen, "%s/%s", parent, e->d_name) != 0)
            continue;
        if (wf_ckpt_folder_kind(path, WF_CKPT_MARKER, NULL, 0) < WF_FOLDER_EMPTY)
            continue;
        char why[512];
        if (wf_ckpt_remove(path, WF_CKPT_MARKER, why, sizeof why) == 0) {
            removed++;
            snprintf(text, sizeof text, "removed %s, left by an interrupted save", path);
        } else {
            snprintf(text, sizeof text, "left %s in place: %s", path, why);
        }
        if (note)
            note(arg, text);
    }
    closedir(d);
    return removed;
}

int wf_ckpt_swap(const char *tmp, const char *dir, const char *old, char *err, size_t errlen)
{
    char parent[PATH_MAX];
    if (wf_parent_of(dir, parent, sizeof parent, err, errlen) != 0)
        return -1;
    int kind = wf_ckpt_folder_kind(dir, WF_CKPT_MARKER, err, errlen);
    if (kind < 0)
        return -1;
    const char *previous = NULL;  /* where the replaced folder is until removed */
    if (kind == WF_FOLDER_ABSENT) {
        if (rename(tmp, dir) != 0) {
            set_err(err, errlen, "cannot rename %s to %s: %s", tmp, dir, strerror(errno));
            return -1;
        }
    } else if (renameat2(AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        previous = tmp;  /* atomic: dir was never missing */
    } else if (errno == EINVAL || errno == ENOSYS || errno == ENOTSUP) {
        /* no exchange here: a short window without dir, which the next save
         * or load repairs from old (wf_ckpt_clean_stale) */
        if (rename(dir, old) != 0) {
            set_err(err, errlen, "cannot move the previous checkpoint %s aside: %s", dir,
                    strerror(errno));
            return -1;
        }
        if (rename(tmp, dir) != 0) {
            int e = errno;
            rename(old, dir);
            set_err(err, errlen, "cannot rename %s to %s: %s", tmp, dir, strerror(e));
            return -1;
        }
        previous = old;
    } else {
        set_err(err, errlen, "cannot exchange %s with %s: %s", tmp, dir, strerror(errno));
        return -1;
    }
    if (wf_fsync_dir(parent, err, errlen) != 0)
        return -1;
    wf_ckpt_test_kill("swapped");
    if (previous && wf_ckpt_remove(previous, WF_CKPT_MARKER, err, errlen) != 0)
        return -1;
    return 0;
}
