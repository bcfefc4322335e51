/* test_escape.c: compiler/escape.c, checked by the real languages: each
 * hostile text is escaped, written into a C file (string and comment, built
 * with trigraphs on), a Lua chunk (string and line comment), a CMake script
 * (quoted argument) and a shell command (one word, on a comment line too),
 * and what each language reads back must be the text itself, with nothing
 * else run.  Needs cc, cmake and sh (the build's own tools) and liblua. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>
#include <lua.h>

#include "check.h"
#include "escape.h"

static char dir[] = "/tmp/weft-test-escape.XXXXXX";

static const char *const HOSTILE[] = {
    "plain/path.bin",
    "a\"b\\c",
    "end */ int injected = 1; /*",
    /* every trigraph (split here so that this file has none) */
    "?" "?/\n?" "?= trigraphs ?" "?' ?" "?( ?" "?) ?" "?! ?" "?< ?" "?> ?" "?-",
    "*/*/**//",
    "line1\nline2\r\ttab\001\177",
    "it's $HOME ${HOME} $(id) `id`; rm -rf x #",
    "]] --[[ ]==] \\ 'q' \"dq\"",
    "semi;colon ${X} $ENV{HOME} @V@ \\;",
    "trailing backslash \\",
    "0\0unused",  /* (stops at the NUL) */
};
#define N_HOSTILE (sizeof HOSTILE / sizeof *HOSTILE)

static char *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *buf = calloc(1, 1 << 16);
    *n = buf ? fread(buf, 1, (1 << 16) - 1, f) : 0;
    fclose(f);
    return buf;
}

static int write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* Runs the command; 1 when it succeeded and its output file equals want. */
static int reads_back(const char *cmd, const char *out, const char *want) {
    unlink(out);
    if (system(cmd) != 0) return 0;
    size_t n;
    char *got = slurp(out, &n);
    int same = got && n == strlen(want) && memcmp(got, want, n) == 0;
    free(got);
    return same;
}

static void test_c(const char *s, int i) {
    char esc[1024], src[8192], path[256], cmd[1024], out[256];
    check(wf_escape_c(s, esc, sizeof esc) >= 0, "c[%d]: escapes", i);
    snprintf(src, sizeof src,
             "#include <stdio.h>\n/* %s */\nstatic const char s[] = \"%s\";\n"
             "int main(int c, char **v) { (void)c; FILE *f = fopen(v[1], \"wb\"); "
             "fputs(s, f); return fclose(f); } /* %s */\n", esc, esc, esc);
    snprintf(path, sizeof path, "%s/c%d.c", dir, i);
    snprintf(out, sizeof out, "%s/c%d.out", dir, i);
    write_text(path, src);
    snprintf(cmd, sizeof cmd, "cc -std=c99 -trigraphs -Werror=trigraphs -o %s/c%d %s 2>/dev/null && %s/c%d %s",
             dir, i, path, dir, i, out);
    check(reads_back(cmd, out, s), "c[%d]: a C string and comments read it back as it was", i);
}

static void test_lua(const char *s, int i) {
    char esc[1024], src[8192];
    check(wf_escape_lua(s, esc, sizeof esc) >= 0, "lua[%d]: escapes", i);
    /* a comment line first: a newline in it would make the next text code */
    snprintf(src, sizeof src, "  -- %s\nreturn \"%s\", ...\n-- %s\n", esc, esc, esc);
    lua_State *L = luaL_newstate();
    int ok = luaL_loadstring(L, src) == LUA_OK && lua_pcall(L, 0, LUA_MULTRET, 0) == LUA_OK &&
             lua_gettop(L) == 1 && lua_type(L, 1) == LUA_TSTRING;
    size_t n = 0;
    const char *got = ok ? lua_tolstring(L, 1, &n) : NULL;
    check(ok && n == strlen(s) && memcmp(got, s, n) == 0,
          "lua[%d]: a Lua string and comment read it back as it was, and nothing else runs", i);
    lua_close(L);
}

static void test_cmake(const char *s, int i) {
    char esc[1024], src[8192], path[256], cmd[1024], out[256];
    int k = wf_escape_cmake(s, esc, sizeof esc);
    int control = 0;
    for (const char *q = s; *q; q++)
        control |= ((unsigned char)*q < 32 || *q == 127) && *q != '\n' && *q != '\t' && *q != '\r';
    if (control) {
        check(k < 0, "cmake[%d]: a control byte is refused", i);
        return;
    }
    check(k >= 0, "cmake[%d]: escapes", i);
    snprintf(out, sizeof out, "%s/m%d.out", dir, i);
    snprintf(src, sizeof src, "set(V \"%s\")\nfile(WRITE \"%s\" \"${V}\")\n", esc, out);
    snprintf(path, sizeof path, "%s/m%d.cmake", dir, i);
    write_text(path, src);
    snprintf(cmd, sizeof cmd, "cmake -P %s >/dev/null 2>&1", path);
    check(reads_back(cmd, out, s), "cmake[%d]: a quoted argument reads it back as it was", i);
}

static void test_sh(const char *s, int i) {
    char esc[1024], src[8192], path[256], cmd[1024], out[256];
    int k = wf_escape_sh(s, esc, sizeof esc);
    int control = 0;
    for (const char *q = s; *q; q++) control |= (unsigned char)*q < 32 || *q == 127;
    if (control) {
        check(k < 0, "sh[%d]: a control byte is refused", i);
        return;
    }
    check(k >= 0, "sh[%d]: escapes", i);
    snprintf(out, sizeof out, "%s/s%d.out", dir, i);
    snprintf(src, sizeof src, "# %s\nset -e\nprintf %%s %s > \"$1\"\n", esc, esc);
    snprintf(path, sizeof path, "%s/s%d.sh", dir, i);
    write_text(path, src);
    snprintf(cmd, sizeof cmd, "sh %s %s 2>/dev/null", path, out);
    check(reads_back(cmd, out, s), "sh[%d]: one shell word reads it back as it was", i);
}

/* Never truncated: a buffer one byte short of the result is an error. */
static void test_sizes(void) {
    char buf[64];
    const char *s = "a\"?*/\n";
    int (*const fns[])(const char *, char *, size_t) = { wf_escape_c, wf_escape_lua, wf_escape_cmake,
                                                         wf_escape_sh };
    const char *names[] = { "c", "lua", "cmake", "sh" };
    for (int f = 0; f < 4; f++) {
        const char *t = f == 3 ? "it's" : s;
        int k = fns[f](t, buf, sizeof buf);
        check(k > 0 && (size_t)k == strlen(buf), "%s: returns the escaped length", names[f]);
        check(fns[f](t, buf, (size_t)k) == -1, "%s: one byte too few is an error, not a shorter text",
              names[f]);
        check(fns[f](t, buf, (size_t)k + 1) == k, "%s: exactly enough fits", names[f]);
    }
    check(wf_escape_c("x", buf, 0) == -1, "c: no room at all is an error");
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    for (size_t i = 0; i < N_HOSTILE; i++) {
        test_c(HOSTILE[i], (int)i);
        test_lua(HOSTILE[i], (int)i);
        test_cmake(HOSTILE[i], (int)i);
        test_sh(HOSTILE[i], (int)i);
    }
    test_sizes();
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);  /* the folder this test made */
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", dir);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
