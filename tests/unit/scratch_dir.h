/* scratch_dir.h: for the unit tests that write files (test_data.c,
 * test_safetensors.c): a scratch folder under $TMPDIR, whole files read and
 * written in it, its leftover temporaries counted; the one-line checks are check_line.h's. */
#ifndef WEFT_TEST_SCRATCH_DIR_H
#define WEFT_TEST_SCRATCH_DIR_H
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_line.h"

/* err contains every one of the NULL-terminated words */
static int has_words(const char *err, ...)
{
    va_list ap;
    va_start(ap, err);
    int ok = 1;
    for (const char *w = va_arg(ap, const char *); w; w = va_arg(ap, const char *))
        if (!strstr(err, w))
            ok = 0;
    va_end(ap);
    return ok;
}

static char dir[256];

/* Makes the scratch folder $TMPDIR/NAME_XXXXXX (/tmp without TMPDIR). */
static int make_dir(const char *name)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/%s_XXXXXX", tmp && *tmp ? tmp : "/tmp", name);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

static void path_in(char *buf, size_t len, const char *name)
{
    snprintf(buf, len, "%s/%s", dir, name);
}

static unsigned char *slurp(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(n > 0 ? (size_t)n : 1);
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = n;
    return b;
}

static int spit(const char *path, const void *b, long n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int ok = fwrite(b, 1, (size_t)n, f) == (size_t)n;
    return (fclose(f) == 0 && ok) ? 0 : -1;
}

/* the temporaries (NAME.tmp.*) a failed or interrupted write left behind */
static int count_tmp_files(void)
{
    DIR *d = opendir(dir);
    int n = 0;
    if (!d)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp."))
            n++;
    closedir(d);
    return n;
}

static void remove_dir(void)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    char p[1024];
    for (struct dirent *e; (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    closedir(d);
    rmdir(dir);
}
#endif
