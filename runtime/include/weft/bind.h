/* weft/bind.h: whether a node's ranks are bound to cores (the plan's
 * cluster.bind), one rule for the CPU runtime that binds them
 * (runtime/cpu/bind.c) and the compiler that prices it (simulate's
 * core_share, weft plan's estimate, weft check's report).
 *
 * With more ranks on a node than cores, a rank waiting in MPI polls (it
 * yields, but stays runnable), so the kernel never moves a computing rank off
 * a core it shares onto one whose ranks only wait; binding the node's ranks
 * to the cores in turn, in stage order, keeps a stage's ranks, and any run
 * of neighbouring stages, apart (bind.c).  A node of one stage gains
 * nothing from it (all its ranks compute at once, which the kernel's
 * rotation evens out better: 3 ranks on 2 cores get 2/3 each, bound 1/2),
 * nor, measured, does tensor parallelism (a tp group syncs every layer;
 * bench/bind.sh).  Header only: the compiler and both runtimes include it. */
#ifndef WEFT_BIND_H
#define WEFT_BIND_H

#include <string.h>

/* cluster.bind; 0 (the default of a zeroed wf_program) is "auto" */
enum { WF_BIND_AUTO, WF_BIND_OFF, WF_BIND_STAGES, WF_BIND_ALL, WF_BIND_MODES };

static inline const char *wf_bind_name(int mode) {
    static const char *const names[WF_BIND_MODES] = { "auto", "off", "stages", "all" };
    return mode >= 0 && mode < WF_BIND_MODES ? names[mode] : "?";
}

/* the mode named `s`, or -1 */
static inline int wf_bind_mode(const char *s) {
    for (int m = 0; s && m < WF_BIND_MODES; m++)
        if (!strcmp(s, wf_bind_name(m))) return m;
    return -1;
}

/* The decision and its reason. */
typedef enum {
    WF_BIND_SPREAD,     /* a core (or more) a rank: nothing to bind */
    WF_BIND_NOT_ASKED,  /* cluster.bind = "off" */
    WF_BIND_THREADS,    /* more than one thread a rank: one core would not hold them */
    WF_BIND_ONE_STAGE,  /* the node holds one stage ("auto", "stages") */
    WF_BIND_TP,         /* tensor parallelism ("auto") */
    WF_BIND_BOUND       /* bound to cores in turn in stage order */
} wf_bind_why;

/* For a node of `ranks` ranks on `cores` cores holding ranks of `stages`
 * pipeline stages, a tp group size of `tp` and `threads` threads a rank:
 *   off     never bound;
 *   auto    bound when the node holds more than one stage and tp is 1;
 *   stages  bound when the node holds more than one stage;
 *   all     always bound;
 * and only when the ranks outnumber the cores, a thread each. */
static inline wf_bind_why wf_bind_decide(int mode, int ranks, int cores, int stages, int tp, int threads) {
    if (cores < 1 || ranks <= cores) return WF_BIND_SPREAD;
    if (mode == WF_BIND_OFF) return WF_BIND_NOT_ASKED;
    if (threads > 1) return WF_BIND_THREADS;
    if (mode == WF_BIND_ALL) return WF_BIND_BOUND;
    if (stages < 2) return WF_BIND_ONE_STAGE;
    if (mode == WF_BIND_AUTO && tp > 1) return WF_BIND_TP;
    return WF_BIND_BOUND;
}

#endif
