/* sandbox.c: runs an untrusted Lua plan.
 *
 * The plan sees only the `weft` library and a list of safe base functions (no
 * io, os, require, package, debug, load, pcall, coroutines, metatables, no
 * binary chunks).  An allocator with a cap and a count hook with an instruction
 * budget and a CPU-time limit stop plans that allocate or loop without bound.
 * pcall is withheld so that a plan cannot catch and ignore those stops.
 *
 * The count hook never fires inside a C function, so the library functions
 * whose time is not bounded by their input's size are wrapped (library_guard):
 * table.move, table.sort and string.rep of "" charge their element count to
 * the instruction budget before they run; the pattern functions (string.find,
 * match, gmatch, gsub), whose backtracking cannot be costed in advance, run
 * under a CPU-time watchdog (a profiling timer) that ends the process with the
 * plan's file:line if a call outlives the limit.
 */
#include "sandbox.h"

#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "program.h"
#include "version.h"

extern const unsigned char wf_prelude_lua[];
extern const size_t wf_prelude_lua_len;

enum {
    HOOK_EVERY = 1000,             /* VM instructions between hook calls */
    MESSAGE_MAX = 4096,            /* bytes of a plan's error message we print */
};
static const long long INSTRUCTION_BUDGET = 400LL * 1000 * 1000;
/* CPU time, not wall time: a loaded machine must not fail a good plan */
double wf_sandbox_cpu_limit_s = 2.0;
size_t wf_sandbox_pattern_cap = 0;
size_t wf_sandbox_rep_cap = 0;
void (*wf_sandbox_watchdog_end)(void) = NULL;
/* The watchdog fires this much later than the hook's own check: Lua code is
 * stopped by the hook, the watchdog only ever catches a C function. */
static const double WATCHDOG_GRACE_S = 1.0;

/* The plan running now, for the watchdog's signal handler. */
static wf_sandbox *volatile running;

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
        /* a chunk's functions share its source string, and only two chunks
         * are ever loaded (the prelude and the plan): one strcmp for each */
        if (ar->source == sb->other_source) return;
        if (ar->source != sb->plan_source) {
            if (strcmp(ar->source, sb->chunkname) != 0) {
                sb->other_source = ar->source;
                return;
            }
            sb->plan_source = ar->source;
        }
        sb->last_line = ar->currentline;
        return;
    }
    sb->instructions += HOOK_EVERY;
    if (sb->instructions > INSTRUCTION_BUDGET) {
        lua_pushfstring(L, "%s:%d: plan stopped: it ran past its budget of %d million Lua instructions "
                        "(a plan should finish in well under a second; look for an endless loop)",
                        sb->display, sb->last_line, (int)(INSTRUCTION_BUDGET / 1000000));
        lua_error(L);
    }
    if (now_s() - sb->t0 > wf_sandbox_cpu_limit_s) {
        char limit[32];
        snprintf(limit, sizeof limit, "%g", wf_sandbox_cpu_limit_s);
        lua_pushfstring(L, "%s:%d: plan stopped: it ran past its limit of %s s of CPU time "
                        "(look for an endless loop)", sb->display, sb->last_line, limit);
        lua_error(L);
    }
}
/* ---- the watchdog ------------------------------------------------------- */

/* Appends text to a fixed buffer without the C library's formatting (the
 * signal handler may only call async-signal-safe functions). */
static size_t put_text(char *buf, size_t at, size_t cap, const char *text) {
    while (*text && at + 1 < cap) buf[at++] = *text++;
    return at;
}

static size_t put_int(char *buf, size_t at, size_t cap, long v) {
    char digits[24];
    int n = 0;
    unsigned long u = v < 0 ? 0UL - (unsigned long)v : (unsigned long)v;
    do digits[n++] = (char)('0' + u % 10); while ((u /= 10) && n < (int)sizeof digits);
    if (v < 0 && at + 1 < cap) buf[at++] = '-';
    while (n > 0 && at + 1 < cap) buf[at++] = digits[--n];
    return at;
}

/* SIGPROF after the CPU limit and its grace: the plan is inside a C function
 * that the hook cannot interrupt (a pattern that backtracks).  Nothing has
 * been written yet while a plan runs, so ending the process loses nothing. */
static void watchdog_fired(int sig) {
    (void)sig;
    wf_sandbox *sb = running;
    if (!sb) return;
    char msg[1400];
    size_t at = 0;
    at = put_text(msg, at, sizeof msg, "weft: error: ");
    at = put_text(msg, at, sizeof msg, sb->display);
    at = put_text(msg, at, sizeof msg, ":");
    at = put_int(msg, at, sizeof msg, sb->last_line);
    at = put_text(msg, at, sizeof msg, ": plan stopped: it ran past its limit of ");
    at = put_int(msg, at, sizeof msg, (long)(wf_sandbox_cpu_limit_s + 0.5));
    at = put_text(msg, at, sizeof msg, " s of CPU time inside ");
    const char *in = sb->in_library;
    at = put_text(msg, at, sizeof msg, in ? in : "a library function");
    int pattern = in && in[0] == 's' && strcmp(in, "string.rep") != 0;
    at = put_text(msg, at, sizeof msg,
                  pattern ? " (look for a string pattern that backtracks, e.g. \".-.-.-x\" "
                            "or a back-reference, over a long subject)\n"
                          : " (look for a library call over a huge table, range or string)\n");
    ssize_t ignored = write(2, msg, at);
    (void)ignored;
    if (wf_sandbox_watchdog_end) wf_sandbox_watchdog_end();
    _exit(1);
}

static struct sigaction saved_action;
static struct itimerval saved_timer;

static void watchdog_start(wf_sandbox *sb) {
    running = sb;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = watchdog_fired;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, &saved_action);
    double t = wf_sandbox_cpu_limit_s + WATCHDOG_GRACE_S;
    struct itimerval it = { { 0, 0 }, { (time_t)t, (suseconds_t)((t - floor(t)) * 1e6) } };
    setitimer(ITIMER_PROF, &it, &saved_timer);
}

static void watchdog_stop(void) {
    struct itimerval off = { { 0, 0 }, { 0, 0 } };
    setitimer(ITIMER_PROF, &off, NULL);
    sigaction(SIGPROF, &saved_action, NULL);
    running = NULL;
}

/* ---- library guards ------------------------------------------------------- */

enum guard_kind { G_MOVE, G_SORT, G_REP, G_FIND, G_MATCH, G_GMATCH, G_GSUB, G_GMATCH_STEP, G__COUNT };
static const char *const guard_names[G__COUNT] = {
    "table.move", "table.sort", "string.rep", "string.find", "string.match",
    "string.gmatch", "string.gsub", "string.gmatch's iterator"};
static const char *const guard_units[G__COUNT] = {
    "elements", "elements", "copies", "", "", "", "", ""};

/* What one element costs, in Lua instructions of time: a comparison in
 * table.sort and a move in table.move read and write the table through the
 * C API (measured: about 8 and 4 times an instruction). */
static const double SORT_COST = 8, MOVE_COST = 4;

/* Adds the cost of `count` elements, `weight` instructions each, to the plan's
 * budget, refusing the call before it runs if that would overspend it. */
static void charge(lua_State *L, wf_sandbox *sb, lua_Unsigned count, double weight, enum guard_kind kind) {
    if ((double)count * weight > (double)(INSTRUCTION_BUDGET - sb->instructions)) {
        char n[32];
        snprintf(n, sizeof n, "%llu", (unsigned long long)count);
        lua_pushfstring(L, "%s:%d: plan stopped: %s of %s %s would run past the plan's "
                        "budget of %d million steps (a plan should finish in well under a second)",
                        sb->display, sb->last_line, guard_names[kind], n, guard_units[kind],
                        (int)(INSTRUCTION_BUDGET / 1000000));
        lua_error(L);
    }
    sb->instructions += (long long)((double)count * weight);
}

/* The wrapper around one library function: upvalue 1 the original, upvalue 2
 * its guard_kind.  Charges what the call will cost where that is known from
 * its arguments, names the function for the watchdog, and calls it. */
static int guarded_call(lua_State *L) {
    wf_sandbox *sb;
    lua_getallocf(L, (void **)&sb);
    enum guard_kind kind = (enum guard_kind)lua_tointeger(L, lua_upvalueindex(2));
    int n = lua_gettop(L);
    if (kind == G_MOVE && n >= 3 && lua_isinteger(L, 2) && lua_isinteger(L, 3)) {
        lua_Integer f = lua_tointeger(L, 2), e = lua_tointeger(L, 3);
        if (e >= f) charge(L, sb, (lua_Unsigned)e - (lua_Unsigned)f + 1, MOVE_COST, kind);
    } else if (kind == G_SORT && lua_type(L, 1) == LUA_TTABLE) {
        lua_Unsigned len = lua_rawlen(L, 1);
        if (len > 1) charge(L, sb, len, SORT_COST * ceil(log2((double)len)), kind);
    } else if (kind == G_REP && n >= 2 && lua_isinteger(L, 2) && lua_rawlen(L, 1) == 0 &&
               (n < 3 || lua_rawlen(L, 3) == 0)) {
        /* a non-empty result is bounded by the memory cap; "" repeated is not */
        lua_Integer times = lua_tointeger(L, 2);
        if (times > 0) charge(L, sb, (lua_Unsigned)times, 1, kind);
    }
    if (wf_sandbox_rep_cap && kind == G_REP && n >= 2 && lua_isinteger(L, 2) && lua_tointeger(L, 2) > 0) {
        /* the fuzzer's bound: under AddressSanitizer each repetition's memcpy
         * is intercepted, and 128 MiB of "x" took 1.5 s of CPU time in the C
         * function, past the watchdog */
        lua_Integer times = lua_tointeger(L, 2);
        size_t s_len = 0, sep_len = 0;  /* numbers as strings, as string.rep converts them */
        if (lua_isstring(L, 1)) lua_tolstring(L, 1, &s_len);
        if (n >= 3 && lua_isstring(L, 3)) lua_tolstring(L, 3, &sep_len);
        size_t unit = s_len + sep_len;
        if (unit && (lua_Unsigned)times > wf_sandbox_rep_cap / unit)
            return luaL_error(L, "%s: result refused under the fuzzer's bound", guard_names[kind]);
    }
    if (wf_sandbox_pattern_cap && kind >= G_FIND && kind <= G_GSUB && lua_type(L, 1) == LUA_TSTRING &&
        lua_type(L, 2) == LUA_TSTRING) {
        /* the fuzzer's bound (the watchdog would end its process): a short
         * subject and at most two repetitions or back-references */
        const char *pat = lua_tostring(L, 2);
        int repeats = 0;
        for (; *pat; pat++) repeats += strchr("*+-?", *pat) != NULL || (pat[0] == '%' && pat[1] >= '1' && pat[1] <= '9');
        if (lua_rawlen(L, 1) > wf_sandbox_pattern_cap || repeats > 2)
            return luaL_error(L, "%s: pattern refused under the fuzzer's bound", guard_names[kind]);
    }
    const char *outer = sb->in_library;
    sb->in_library = guard_names[kind];
    lua_pushvalue(L, lua_upvalueindex(1));
    lua_insert(L, 1);
    lua_call(L, n, LUA_MULTRET);
    sb->in_library = outer;
    if (kind == G_GMATCH && lua_gettop(L) >= 1 && lua_isfunction(L, 1)) {
        lua_pushvalue(L, 1);
        lua_pushinteger(L, G_GMATCH_STEP);  /* the matching happens in the iterator */
        lua_pushcclosure(L, guarded_call, 2);
        lua_replace(L, 1);
    }
    return lua_gettop(L);
}

static void guard(lua_State *L, const char *lib, const char *name, enum guard_kind kind) {
    lua_getglobal(L, lib);
    lua_getfield(L, -1, name);
    lua_pushinteger(L, kind);
    lua_pushcclosure(L, guarded_call, 2);
    lua_setfield(L, -2, name);
    lua_pop(L, 1);
}

/* Before the prelude runs: it takes its own copies of these functions. */
static void guard_libraries(lua_State *L) {
    guard(L, "table", "move", G_MOVE);
    guard(L, "table", "sort", G_SORT);
    guard(L, "string", "rep", G_REP);
    guard(L, "string", "find", G_FIND);
    guard(L, "string", "match", G_MATCH);
    guard(L, "string", "gmatch", G_GMATCH);
    guard(L, "string", "gsub", G_GSUB);
}

static const char *const SAFE_GLOBALS[] = {
    "assert", "error", "ipairs", "next", "pairs", "select", "tonumber", "tostring",
    "type", "rawequal", "rawlen", "math", "table", "utf8", NULL
};

/* print goes to stderr: stdout belongs to the compiler's reports. */
/* print goes to stderr: stdout belongs to the compiler's reports.  A line is
 * cut at MESSAGE_MAX bytes, like an error message. */
static int plan_print(lua_State *L) {
    int n = lua_gettop(L);
    size_t printed = 0;
    for (int i = 1; i <= n && printed < MESSAGE_MAX; i++) {
        size_t len;
        const char *text = luaL_tolstring(L, i, &len);
        size_t room = MESSAGE_MAX - printed;
        fprintf(stderr, "%s%.*s", i > 1 ? "\t" : "", (int)(len < room ? len : room), text);
        printed += len;
        lua_pop(L, 1);
    }
    fputs(printed > MESSAGE_MAX ? " ... (truncated)\n" : "\n", stderr);
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

/* Feeds the plan's text to Lua's parser a line at a time, so that an error
 * the parser raises without a position ("C stack overflow" in a very long
 * expression) can still be given the line it was reading. */
typedef struct {
    const char *text;
    size_t len, at;
    int line;
} line_reader;

static const char *read_line(lua_State *L, void *ud, size_t *size) {
    (void)L;
    line_reader *r = ud;
    if (r->at >= r->len) {
        *size = 0;
        return NULL;
    }
    const char *s = r->text + r->at;
    const char *nl = memchr(s, '\n', r->len - r->at);
    *size = nl ? (size_t)(nl - s) + 1 : r->len - r->at;
    r->at += *size;
    r->line++;
    return s;
}

/* The length of a "file:LINE: " prefix at the start of msg naming `file`, or 0. */
static size_t position_prefix(const char *msg, const char *file) {
    size_t n = strlen(file);
    if (strncmp(msg, file, n) != 0 || msg[n] != ':') return 0;
    const char *p = msg + n + 1;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    if (*p != ':') return 0;
    return (size_t)(p + 1 - msg) + (p[1] == ' ');
}

/* Lua names a long path by its tail, "...ns/plan.lua:5:"; the length of such a
 * prefix when it is a tail of the plan's path, or 0. */
static size_t short_source_prefix(const char *msg, const char *display) {
    if (strncmp(msg, "...", 3) != 0) return 0;
    const char *colon = strchr(msg + 3, ':');
    if (!colon) return 0;
    size_t tail = (size_t)(colon - (msg + 3)), n = strlen(display);
    if (tail == 0 || tail > n || strncmp(display + n - tail, msg + 3, tail) != 0) return 0;
    const char *p = colon + 1;
    if (*p < '0' || *p > '9') return 0;
    while (*p >= '0' && *p <= '9') p++;
    return *p == ':' ? (size_t)(colon - msg) : 0;
}

/* Reports the error on top of the stack, naming the plan's file:line whatever
 * raised it: the plan (already "plan.lua:5: ..."), the prelude's own code
 * (its resource limits: "weft/prelude.lua:109: stack overflow"), the parser,
 * or a value that is not a string.  `line` is the plan line to name where the
 * message has none.  At most MESSAGE_MAX bytes of the message are printed. */
static int report_lua_error(wf_sandbox *sb, int status, int line) {
    if (status == LUA_ERRMEM) {
        wf_error("%s:%d: plan stopped: it allocated more than the sandbox's %zu MiB "
                 "(look for a table or string that grows without bound)",
                 sb->display, line, sb->cap >> 20);
        return -1;
    }
    size_t len = 0;
    const char *msg = lua_type(sb->L, -1) == LUA_TSTRING ? lua_tolstring(sb->L, -1, &len) : NULL;
    const char *cut = len > MESSAGE_MAX ? " ... (truncated)"
                    : msg && len >= 14 && strcmp(msg + len - 14, "stack overflow") == 0
                        ? " (nested too deeply: a table, an expression or a recursion)" : "";
    int shown = (int)(len > MESSAGE_MAX ? MESSAGE_MAX : len);
    size_t skip;
    if (!msg) {
        wf_error("%s:%d: the plan raised an error whose value is %s, not a message",
                 sb->display, line, luaL_typename(sb->L, -1));
    } else if (position_prefix(msg, sb->display)) {
        wf_error("%.*s%s", shown, msg, cut);
    } else if ((skip = short_source_prefix(msg, sb->display)) != 0) {
        wf_error("%s%.*s%s", sb->display, shown - (int)skip, msg + skip, cut);
    } else if ((skip = position_prefix(msg, "weft/prelude.lua")) != 0) {
        wf_error("%s:%d: plan stopped: %.*s%s (raised inside weft while it read the plan, at %.*s)",
                 sb->display, line, shown - (int)skip, msg + skip, cut, (int)skip - 2, msg);
    } else {
        wf_error("%s:%d: %.*s%s", sb->display, line, shown, msg, cut);
    }
    return -1;
}

/* The end of sandbox_run, whatever its outcome. */
static int finish(wf_sandbox *sb, int status, int line) {
    lua_sethook(sb->L, NULL, 0, 0);
    watchdog_stop();
    return status == LUA_OK ? 0 : report_lua_error(sb, status, line);
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
    guard_libraries(L);
    lua_pushstring(L, WEFT_VERSION);
    lua_setglobal(L, "WEFT_VERSION");
    sb->t0 = now_s();
    watchdog_start(sb);
    lua_sethook(L, budget_hook, LUA_MASKCOUNT | LUA_MASKLINE, HOOK_EVERY);

    /* The prelude runs with the full library; it returns the weft table. */
    int st = luaL_loadbufferx(L, (const char *)wf_prelude_lua, wf_prelude_lua_len,
                              "=weft/prelude.lua", "t");
    if (st != LUA_OK) {
        free(src);
        return finish(sb, st, 0);
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
        return finish(sb, st, 0);
    }
    int weft_index = lua_gettop(L);

    /* The plan: text only, in its own environment. */
    line_reader reader = { src, len, 0, 0 };
    st = lua_load(L, read_line, &reader, sb->chunkname, "t");
    free(src);
    if (st != LUA_OK) return finish(sb, st, reader.line);
    push_plan_env(L, weft_index);
    if (!lua_setupvalue(L, -2, 1)) lua_pop(L, 1);
    st = lua_pcall(L, 0, 1, 0);
    return finish(sb, st, sb->last_line);   /* on success the plan's value is on top */
}

void sandbox_close(wf_sandbox *sb) {
    if (sb->L) lua_close(sb->L);
    sb->L = NULL;
}
