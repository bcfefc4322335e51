/* escape.c: one escaping function per language weft generates (escape.h). */
#include "escape.h"

#include <stdio.h>
#include <string.h>

/* Appends len bytes of text to out[*k], keeping room for the NUL. */
static int put(char *out, size_t n, size_t *k, const char *text, size_t len) {
    if (*k + len + 1 > n) return -1;
    memcpy(out + *k, text, len);
    *k += len;
    out[*k] = 0;
    return 0;
}

static int put_octal(char *out, size_t n, size_t *k, unsigned char ch) {
    char t[8];
    snprintf(t, sizeof t, "\\%03o", ch);
    return put(out, n, k, t, 4);
}

static int is_control(unsigned char ch) { return ch < 32 || ch == 127; }

int wf_escape_c(const char *s, char *out, size_t n) {
    size_t k = 0;
    if (n == 0) return -1;
    out[0] = 0;
    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        int rc;
        if (ch == '"' || ch == '\\' || ch == '?') rc = put(out, n, &k, (char[]){ '\\', (char)ch }, 2);
        else if (ch == '/' && i > 0 && s[i - 1] == '*') rc = put_octal(out, n, &k, ch);
        else if (is_control(ch)) rc = put_octal(out, n, &k, ch);
        else rc = put(out, n, &k, (const char *)&s[i], 1);
        if (rc != 0) return -1;
    }
    return (int)k;
}

int wf_escape_lua(const char *s, char *out, size_t n) {
    size_t k = 0;
    if (n == 0) return -1;
    out[0] = 0;
    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        int rc;
        if (ch == '"' || ch == '\'' || ch == '\\') rc = put(out, n, &k, (char[]){ '\\', (char)ch }, 2);
        else if (is_control(ch)) {
            char t[8];  /* \ddd is decimal in Lua; three digits so a digit after it stays apart */
            snprintf(t, sizeof t, "\\%03d", ch);
            rc = put(out, n, &k, t, 4);
        } else rc = put(out, n, &k, (const char *)&s[i], 1);
        if (rc != 0) return -1;
    }
    return (int)k;
}

int wf_escape_cmake(const char *s, char *out, size_t n) {
    size_t k = 0;
    if (n == 0) return -1;
    out[0] = 0;
    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        int rc;
        if (ch == '"' || ch == '\\' || ch == '$') rc = put(out, n, &k, (char[]){ '\\', (char)ch }, 2);
        else if (ch == '\n') rc = put(out, n, &k, "\\n", 2);
        else if (ch == '\t') rc = put(out, n, &k, "\\t", 2);
        else if (ch == '\r') rc = put(out, n, &k, "\\r", 2);
        else if (is_control(ch)) rc = -1;
        else rc = put(out, n, &k, (const char *)&s[i], 1);
        if (rc != 0) return -1;
    }
    return (int)k;
}

int wf_escape_sh(const char *s, char *out, size_t n) {
    size_t k = 0;
    if (n == 0) return -1;
    out[0] = 0;
    if (put(out, n, &k, "'", 1) != 0) return -1;
    for (size_t i = 0; s[i]; i++) {
        unsigned char ch = (unsigned char)s[i];
        int rc;
        if (is_control(ch)) rc = -1;
        else if (ch == '\'') rc = put(out, n, &k, "'\\''", 4);
        else rc = put(out, n, &k, (const char *)&s[i], 1);
        if (rc != 0) return -1;
    }
    if (put(out, n, &k, "'", 1) != 0) return -1;
    return (int)k;
}
