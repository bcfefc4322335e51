/* escape.h: text from outside (a plan, a DeepSpeed config, the command line)
 * written into the files weft generates, made to stay data in the language
 * of each file.  One function per language; each writes at most n bytes
 * (with the NUL) into out and returns the escaped length, or -1 when the
 * result would not fit (never truncated) or the text cannot be written in
 * that language at all (only wf_escape_sh and wf_escape_cmake refuse). */
#ifndef WEFT_ESCAPE_H
#define WEFT_ESCAPE_H

#include <stddef.h>

/* C: the inside of a string literal "..." that is also inert inside a block
 * comment: '"' and '\' escaped, every '?' as \? (no trigraph such as ??/ can
 * form), a '/' after '*' as \057 (no comment end), control bytes and DEL as
 * three-digit octal escapes. */
int wf_escape_c(const char *s, char *out, size_t n);

/* Lua: the inside of a quoted string "..." that is also inert on a `--` line
 * comment: '"', '\'' and '\' escaped, control bytes and DEL as \ddd (a newline
 * cannot end the comment and start a plan line). */
int wf_escape_lua(const char *s, char *out, size_t n);

/* CMake: the inside of a quoted argument "...": '\', '"' and '$' escaped
 * (no variable reference), newline, tab and CR as \n \t \r; other control
 * bytes refused.  Semicolons stay: the generated files only use the value
 * in quoted arguments, where they do not split a list. */
int wf_escape_cmake(const char *s, char *out, size_t n);

/* POSIX shell: one word, single-quoted ('it'\''s'); control bytes refused
 * (a word may also be shown on a comment line). */
int wf_escape_sh(const char *s, char *out, size_t n);

#endif
