/* test_ckpt_folder.c: checkpoint folders (runtime/common/ckpt_folder.c):
 * what is refused, what is replaced, what a cleanup removes and what it
 * leaves; every check looks at the files themselves afterwards. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE  /* renameat2, O_DIRECTORY */
#endif
#include "ckpt_folder.h"

#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check_line.h"

static char root[256];

static const char *at(const char *name)
{
    static char buf[4][PATH_MAX];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, name);
    return buf[k];
}

static void put(const char *name, const char *text)
{
    FILE *f = fopen(at(name), "w");
    fputs(text, f);
    fclose(f);
}

static int exists(const char *name)
{
    struct stat st;
    return lstat(at(name), &st) == 0;
}

static int holds(const char *name, const char *text)
{
    char buf[256] = "";
    FILE *f = fopen(at(name), "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return strcmp(buf, text) == 0;
}

static void a_ckpt(const char *name, const char *content)
{
    char f[PATH_MAX];
    mkdir(at(name), 0755);
    wf_ckpt_mark(at(name), WF_CKPT_MARKER, NULL, 0);
    snprintf(f, sizeof f, "%s/model.safetensors", name);
    put(f, content);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(root, sizeof root, "%s/weft_test_ckf_XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(root))
        return 2;
    char err[PATH_MAX + 512], out[64];

    /* paths are never truncated */
    check(wf_path_fmt(out, sizeof out, err, sizeof err, "%s/%s", "abc", "def") == 0 &&
              !strcmp(out, "abc/def"), "a path that fits is built");
    check(wf_path_fmt(out, 8, err, sizeof err, "%s/%s", "abcdef", "ghi") == -1 && out[0] == '\0' &&
              strstr(err, "path too long: 10 bytes, at most 7"), "a path too long is an error: %s", err);
    check(wf_parent_of("a/b/c/", out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "a/b"),
          "parent of a/b/c/ is a/b (%s)", out);
    check(wf_parent_of("c", out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "."),
          "parent of c is .");
    check(wf_parent_of("/c", out, sizeof out, err, sizeof err) == 0 && !strcmp(out, "/"),
          "parent of /c is /");

    /* what a save may replace */
    mkdir(at("user"), 0755);
    mkdir(at("user/results"), 0755);
    put("user/results/r.csv", "1,2,3\n");
    check(wf_ckpt_folder_kind(at("user"), WF_CKPT_MARKER, err, sizeof err) == -1 &&
              strstr(err, "was not written by Weft") && strstr(err, "nothing was changed"),
          "a user's folder is not replaced: %s", err);
    put("file", "x");
    check(wf_ckpt_folder_kind(at("file"), WF_CKPT_MARKER, err, sizeof err) == -1 &&
              strstr(err, "is a file"), "a file is not replaced: %s", err);
    symlink(at("user"), at("link"));
    check(wf_ckpt_folder_kind(at("link"), WF_CKPT_MARKER, err, sizeof err) == -1 &&
              strstr(err, "symbolic link"), "a symbolic link is not followed: %s", err);
    mkdir(at("empty"), 0755);
    check(wf_ckpt_folder_kind(at("empty"), WF_CKPT_MARKER, err, sizeof err) == WF_FOLDER_EMPTY,
          "an empty folder may be used");
    check(wf_ckpt_folder_kind(at("nothing"), WF_CKPT_MARKER, err, sizeof err) == WF_FOLDER_ABSENT,
          "an absent one too");
    a_ckpt("ck", "old");
    check(wf_ckpt_folder_kind(at("ck"), WF_CKPT_MARKER, err, sizeof err) == WF_FOLDER_OURS,
          "a folder with the marker is Weft's");

    /* removal: flat, marker last, never someone else's */
    check(wf_ckpt_remove(at("user"), WF_CKPT_MARKER, err, sizeof err) == -1 &&
              holds("user/results/r.csv", "1,2,3\n"), "removing a user's folder is refused, r.csv intact");
    a_ckpt("mixed", "m");
    mkdir(at("mixed/sub"), 0755);
    put("mixed/sub/keep.txt", "keep");
    check(wf_ckpt_remove(at("mixed"), WF_CKPT_MARKER, err, sizeof err) == -1 &&
              holds("mixed/sub/keep.txt", "keep") && exists("mixed/" WF_CKPT_MARKER) &&
              strstr(err, "Weft did not write"),
          "a marked folder holding a sub-folder is not removed (nor the sub-folder): %s", err);

    /* the swap: the new folder under the name, the old one gone */
    a_ckpt("ck.tmp-1", "new");
    check(wf_ckpt_swap(at("ck.tmp-1"), at("ck"), at("ck.old-1"), err, sizeof err) == 0 &&
              holds("ck/model.safetensors", "new") && !exists("ck.tmp-1") && !exists("ck.old-1"),
          "swap over Weft's checkpoint: new in place, old removed (%s)", err);
    a_ckpt("fresh.tmp-1", "first");
    check(wf_ckpt_swap(at("fresh.tmp-1"), at("fresh"), at("fresh.old-1"), err, sizeof err) == 0 &&
              holds("fresh/model.safetensors", "first"), "swap onto a new name");
    a_ckpt("user.tmp-1", "new");
    check(wf_ckpt_swap(at("user.tmp-1"), at("user"), at("user.old-1"), err, sizeof err) == -1 &&
              holds("user/results/r.csv", "1,2,3\n") && holds("user.tmp-1/model.safetensors", "new"),
          "swap onto a user's folder is refused, both intact: %s", err);

    /* cleanup after killed saves */
    a_ckpt("ck.tmp-77", "stale");
    a_ckpt("ck.old-78", "stale");
    mkdir(at("ck.tmp-79"), 0755);            /* killed before its marker: empty */
    mkdir(at("ck.tmp-80"), 0755);            /* looks like one, is a user's */
    put("ck.tmp-80/notes.txt", "mine");
    mkdir(at("ck.tmp-x1"), 0755);            /* not a pid */
    wf_ckpt_mark(at("ck.tmp-x1"), WF_CKPT_MARKER, NULL, 0);
    a_ckpt("other.tmp-5", "another checkpoint's");
    int removed = wf_ckpt_clean_stale(at("ck"), 0, NULL, NULL, err, sizeof err);
    check(removed == 3 && !exists("ck.tmp-77") && !exists("ck.old-78") && !exists("ck.tmp-79"),
          "3 leftovers of killed saves removed (%d)", removed);
    check(holds("ck.tmp-80/notes.txt", "mine") && exists("ck.tmp-x1") &&
              holds("other.tmp-5/model.safetensors", "another checkpoint's") &&
              holds("ck/model.safetensors", "new"),
          "unmarked look-alikes, other names and the checkpoint itself are left");

    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    if (system(cmd) != 0)
        return 2;
    printf("test_ckpt_folder: %d passed, %d failed\n", n_pass, n_fail);
    return n_fail ? 1 : 0;
}
