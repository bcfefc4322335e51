/* sandbox.h: a Lua state that runs one untrusted plan under limits. */
#ifndef WEFT_SANDBOX_H
#define WEFT_SANDBOX_H

#include <lua.h>
#include <stddef.h>

typedef struct wf_sandbox {
    lua_State *L;
    size_t used, cap;          /* bytes allocated by Lua, and the cap */
    int out_of_memory;
    long long instructions;    /* counted by the hook */
    double t0;                 /* CPU time at the start, for the limit */
    int last_line;             /* last plan line the hook saw */
    /* the hook's memo of lua_Debug.source: the plan chunk's and another
     * chunk's (the prelude's) string, so most line events skip the strcmp */
    const char *plan_source, *other_source;
    const char *volatile in_library;  /* the guarded library function running, for the watchdog */
    char chunkname[520];       /* "@path" */
    char display[512];
} wf_sandbox;

/* Runs the prelude, then the plan at `path`; overrides are "a.b=value".  On
 * success returns 0 with the plan's return value on top of the Lua stack;
 * on failure reports a file:line: diagnostic and returns -1. */
int sandbox_run(wf_sandbox *sb, const char *path, const char *const *overrides, int n_overrides);
void sandbox_close(wf_sandbox *sb);
/* The plan's limit of CPU time in seconds (2; the fuzzer lowers it). */
extern double wf_sandbox_cpu_limit_s;
/* 0, or (the fuzzer) the longest subject a pattern function takes, with at
 * most two repetitions in its pattern: bounded without the watchdog, which
 * ends the process. */
extern size_t wf_sandbox_pattern_cap;
/* 0, or (the fuzzer) the longest result string.rep makes, in bytes. */
extern size_t wf_sandbox_rep_cap;
/* NULL, or (the fuzzer: abort, so that libFuzzer reports the input and keeps
 * it) what the watchdog calls after printing its message, instead of ending
 * the process with exit status 1. */
extern void (*wf_sandbox_watchdog_end)(void);
/* Pushes the mesh module for the prelude (mesh_lua.c): its axes, default
 * order and mesh.order parser. */
void mesh_push_lua(lua_State *L);

#endif
