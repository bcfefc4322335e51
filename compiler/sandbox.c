/* sandbox.c: runs an untrusted Lua plan.
 *
 * The plan sees only the `weft` library and a list of safe base functions (no
 * io, os, require, package, debug, load, pcall, coroutines, metatables, no
 * binary chunks).  An allocator with a cap and a count hook with an instruction
 * budget and a CPU-time limit stop plans that allocate or loop without bound.
 * pcall is withheld so that a plan cannot catch and ignore those stops.
 */
#include "sandbox.h"

#include <lauxlib.h>
#include <lualib.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "program.h"
#include "version.h"

extern const unsigned char wf_prelude_lua[];
extern const size_t wf_prelude_lua_len;

enum {
    HOOK_EVERY = 1000,             /* VM instructions between hook calls */
};
static const long long INSTRUCTION_BUDGET = 400LL * 1000 * 1000;
/* CPU time, not wall time: a loaded machine must not fail a good plan */
static const double CPU_LIMIT_S = 2.0;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *capped_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
    wf_sandbox *sb = ud;
    if (ptr == NULL) osize = 0;
    if (nsize == 0) {
        free(ptr);
        sb->used -= osize;
        return NULL;
    }
    if (nsize > osize && sb->used + (nsize - osize) > sb->cap) {
        sb->out_of_memory = 1;
        return NULL;
    }
    void *q = realloc(ptr, nsize);
    if (q) sb->used += nsize - osize;
    return q;
}

/* Line events keep the plan's last executed line (memory errors and a plan's
 * return value carry no position of their own; a tail call `return weft.plan
 * {...}` leaves no plan frame to ask).  Count events stop the plan when the
 * budget is spent, naming that line rather than weft's own code. */
static void budget_hook(lua_State *L, lua_Debug *ar) {
    wf_sandbox *sb;
    lua_getallocf(L, (void **)&sb);
    if (ar->event == LUA_HOOKLINE) {
        lua_getinfo(L, "S", ar);
        if (strcmp(ar->source, sb->chunkname) == 0) sb->last_line = ar->currentline;
        return;
    }
    sb->instructions += HOOK_EVERY;
    if (sb->instructions > INSTRUCTION_BUDGET) {
        lua_pushfstring(L, "%s:%d: plan stopped: it ran past its budget of %d million Lua instructions "
                        "(a plan should finish in well under a second; look for an endless loop)",
                        sb->display, sb->last_line, (int)(INSTRUCTION_BUDGET / 1000000));
        lua_error(L);
    }
    if (now_s() - sb->t0 > CPU_LIMIT_S) {
        lua_pushfstring(L, "%s:%d: plan stopped: it ran past its limit of %d s of CPU time "
                        "(look for an endless loop)", sb->display, sb->last_line, (int)CPU_LIMIT_S);
        lua_error(L);
    }
}

static const char *const SAFE_GLOBALS[] = {
    "assert", "error", "ipairs", "next", "pairs", "select", "tonumber", "tostring",
    "type", "rawequal", "rawlen", "math", "table", "utf8", NULL
};

/* print goes to stderr: stdout belongs to the compiler's reports. */
static int plan_print(lua_State *L) {
    int n = lua_gettop(L);
    for (int i = 1; i <= n; i++) {
        fprintf(stderr, "%s%s", i > 1 ? "\t" : "", luaL_tolstring(L, i, NULL));
        lua_pop(L, 1);
    }
    fputc('\n', stderr);
    return 0;
}

/* Builds the plan's environment table on top of the stack. */
static void push_plan_env(lua_State *L, int weft_index) {
    lua_newtable(L);
    for (const char *const *g = SAFE_GLOBALS; *g; g++) {
        lua_getglobal(L, *g);
        lua_setfield(L, -2, *g);
    }
    /* string library without string.dump (bytecode is a way out of the sandbox) */
    lua_newtable(L);
    lua_getglobal(L, "string");
    lua_pushnil(L);
    while (lua_next(L, -2)) {
        if (strcmp(lua_tostring(L, -2), "dump") != 0) {
            lua_pushvalue(L, -2);
            lua_insert(L, -2);
            lua_settable(L, -5);
        } else {
            lua_pop(L, 1);
        }
    }
    lua_pop(L, 1);
    /* strings' own methods ("x"):dump(...) come from the string metatable's
     * __index: give it a second filtered copy, one the plan cannot reach */
    lua_newtable(L);
    lua_pushnil(L);
    while (lua_next(L, -3)) {
        lua_pushvalue(L, -2);
        lua_insert(L, -2);
        lua_settable(L, -4);
    }
    lua_pushliteral(L, "");
    lua_getmetatable(L, -1);
    lua_pushvalue(L, -3);
    lua_setfield(L, -2, "__index");
    lua_pop(L, 3);
    lua_setfield(L, -2, "string");
    lua_pushcfunction(L, plan_print);
    lua_setfield(L, -2, "print");
    lua_pushvalue(L, weft_index);
    lua_setfield(L, -2, "weft");
    lua_pushvalue(L, -1);
    lua_setfield(L, -2, "_G");
}

static int report_lua_error(wf_sandbox *sb, int status) {
    if (status == LUA_ERRMEM) {
        wf_error("%s:%d: plan stopped: it allocated more than the sandbox's %zu MiB "
                 "(look for a table or string that grows without bound)",
                 sb->display, sb->last_line, sb->cap >> 20);
    } else {
        const char *msg = lua_tostring(sb->L, -1);
        wf_error("%s", msg ? msg : "plan failed with a non-string error value");
    }
    return -1;
}

int sandbox_run(wf_sandbox *sb, const char *path, const char *const *overrides, int n_overrides) {
    memset(sb, 0, sizeof *sb);
    sb->cap = (size_t)256 << 20;
    snprintf(sb->chunkname, sizeof sb->chunkname, "@%s", path);
    snprintf(sb->display, sizeof sb->display, "%s", path);

    FILE *f = fopen(path, "rb");
    if (!f) {
        wf_error("%s: cannot open the plan file", path);
        return -1;
    }
    char *src = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 > cap) {
            cap = cap ? cap * 2 : 65536;
            if (cap > (size_t)16 << 20) {
                fclose(f);
                free(src);
                wf_error("%s: plan file is larger than 16 MiB", path);
                return -1;
            }
            src = realloc(src, cap);
        }
        size_t got = fread(src + len, 1, cap - len, f);
        len += got;
        if (got == 0) break;
    }
    fclose(f);

    lua_State *L = lua_newstate(capped_alloc, sb);
    sb->L = L;
    if (!L) {
        free(src);
        wf_error("cannot create a Lua state");
        return -1;
    }
    luaL_openlibs(L);
    lua_pushstring(L, WEFT_VERSION);
    lua_setglobal(L, "WEFT_VERSION");
    sb->t0 = now_s();
    lua_sethook(L, budget_hook, LUA_MASKCOUNT | LUA_MASKLINE, HOOK_EVERY);

    /* The prelude runs with the full library; it returns the weft table. */
    int st = luaL_loadbufferx(L, (const char *)wf_prelude_lua, wf_prelude_lua_len,
                              "=weft/prelude.lua", "t");
    if (st != LUA_OK) {
        free(src);
        return report_lua_error(sb, st);
    }
    lua_pushstring(L, sb->chunkname);
    lua_newtable(L);
    for (int i = 0; i < n_overrides; i++) {
        const char *eq = strchr(overrides[i], '=');
        lua_pushlstring(L, overrides[i], (size_t)(eq - overrides[i]));
        lua_pushstring(L, eq + 1);
        lua_settable(L, -3);
    }
    mesh_push_lua(L);
    st = lua_pcall(L, 3, 1, 0);
    if (st != LUA_OK) {
        free(src);
        return report_lua_error(sb, st);
    }
    int weft_index = lua_gettop(L);

    /* The plan: text only, in its own environment. */
    st = luaL_loadbufferx(L, src, len, sb->chunkname, "t");
    free(src);
    if (st != LUA_OK) return report_lua_error(sb, st);
    push_plan_env(L, weft_index);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    st = lua_pcall(L, 0, 1, 0);
    if (st != LUA_OK) return report_lua_error(sb, st);
    lua_sethook(L, NULL, 0, 0);
    return 0;   /* the plan's return value is on top of the stack */
}

void sandbox_close(wf_sandbox *sb) {
    if (sb->L) lua_close(sb->L);
    sb->L = NULL;
}
