/* watchdog.c: ends the job when a rank waits on its peers for longer than
 * fault.timeout_s (see watchdog.h).
 *
 * One process is one rank, so the state is the process's.  The main thread
 * writes it around each wait (two clock reads and a few stores: cheap next
 * to any MPI call); the watchdog thread reads it a few times per timeout and
 * otherwise sleeps, so a waiting rank spins no more than MPI's own wait. */
#if !defined(_GNU_SOURCE)
#define _GNU_SOURCE
#endif
#include "watchdog.h"

#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static struct {
    const wf_ctx *c;
    double timeout_s;
    atomic_llong since_ns;      /* the wait's start; 0: not waiting */
    const char *call, *where;   /* the waiting call */
    char what[256];             /* what it is for ("" : unknown) */
    int group;                  /* the group it waits on, or -1 */
    int coll_group;             /* the group of the last collective issued, or -1 */
    char kind;                  /* the schedule instruction running ('\0': none) */
    int m, chunk;
} W = { .group = -1, .coll_group = -1 };

static long long now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

double wf_watch_timeout(void) { return W.timeout_s; }

void wf_watch_what(const wf_ctx *c, int group, const char *fmt, ...) {
    (void)c;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(W.what, sizeof W.what, fmt, ap);
    va_end(ap);
    W.group = group;
}

void wf_watch_done(void) {
    W.what[0] = '\0';
    W.group = -1;
}

void wf_watch_group(int group) { W.coll_group = group; }

void wf_watch_enter(const char *call, const char *where) {
    W.call = call;
    W.where = where;
    atomic_store_explicit(&W.since_ns, now_ns(), memory_order_release);
}

void wf_watch_leave(void) { atomic_store_explicit(&W.since_ns, 0, memory_order_relaxed); }

double wf_instr_begin(wf_ctx *c, char kind, int m, int chunk) {
    W.kind = kind;
    W.m = m;
    W.chunk = chunk;
    return wf_trace_now(c);
}

void wf_instr_end(void) { W.kind = '\0'; }

/* emit_step.c's msg_tag: ((m % accum) * chunks + chunk) * 2 + (gradient) */
void wf_watch_tag_text(const wf_ctx *c, int tag, char *out, int n) {
    const wf_program *p = c->p;
    if (p->chunks < 1 || (long)p->accum * p->chunks * 2 > 32768) {  /* the tag wrapped: not decodable */
        snprintf(out, (size_t)n, "message tag %d", tag);
        return;
    }
    int x = tag / 2;
    snprintf(out, (size_t)n, "%s m=%d chunk=%d", tag % 2 ? "grad" : "act", x / p->chunks, x % p->chunks);
}

static const char *instr_name(char kind) {
    switch (kind) {
    case 'F': return "forward";
    case 'B': return "backward";
    case 'W': return "weight backward";
    case 'O': return "optimizer step";
    default: return "instruction";
    }
}

/* " over the dp group (ranks 0, 1)" */
static void group_text(const wf_ctx *c, int group, char *out, size_t n) {
    out[0] = '\0';
    if (group < 0) return;
    int *members = malloc(sizeof(int) * (size_t)(c->world > 0 ? c->world : 1));
    if (!members) return;
    int count = wf_group_members(c->p, c->rank, (wf_group)group, members, NULL);
    size_t k = (size_t)snprintf(out, n, " over the %s group (ranks", wf_group_name((wf_group)group));
    for (int i = 0; i < count && k < n; i++) k += (size_t)snprintf(out + k, n - k, "%s %d", i ? "," : "", members[i]);
    if (k < n) snprintf(out + k, n - k, ")");
    free(members);
}

static void report_and_abort(double waited) {
    const wf_ctx *c = W.c;
    char instr[96] = "", grp[400], call[48], msg[1400];
    if (W.kind == 'O') snprintf(instr, sizeof instr, "optimizer step: ");
    else if (W.kind && W.kind != 'a' && W.kind != 'g')  /* a send's own text names it */
        snprintf(instr, sizeof instr, "%s m=%d chunk=%d: ", instr_name(W.kind), W.m, W.chunk);
    group_text(c, W.group >= 0 ? W.group : W.coll_group, grp, sizeof grp);
    const char *name = W.call ? W.call : "a wait";
    size_t len = strcspn(name, "(");
    if (len >= sizeof call) len = sizeof call - 1;
    memcpy(call, name, len);
    call[len] = '\0';
    int k = snprintf(msg, sizeof msg,
                     "weft: rank %d: watchdog: waited %.1f s (fault.timeout_s = %g) in %s%s%s (%s at %s), "
                     "step %ld; a peer is dead, stopped or hung: ending the job\n",
                     c->rank, waited, W.timeout_s, instr, W.what[0] ? W.what : call, grp, call,
                     W.where ? W.where : "?", c->step + 1);
    if (k > (int)sizeof msg - 1) k = (int)sizeof msg - 1;
    if (write(STDERR_FILENO, msg, (size_t)k) < 0) { /* nothing left to report to */ }
    /* A rank waiting on the culprit directly began its wait before the ranks
     * that wait on that rank, so it is at its limit too: give it a moment to
     * report before the job ends, so that the log names the culprit's peer
     * and not only a rank further down the chain. */
    double grace = W.timeout_s / 2 < 2.0 ? W.timeout_s / 2 : 2.0;
    struct timespec pause = { (time_t)grace, (long)((grace - (double)(time_t)grace) * 1e9) };
    nanosleep(&pause, NULL);
    /* the main thread is stuck inside MPI: this thread brings the job down */
    MPI_Abort(MPI_COMM_WORLD, 1);
    _exit(1);
}

static void *watch(void *arg) {
    (void)arg;
    long long limit = (long long)(W.timeout_s * 1e9);
    /* a few looks per timeout, at most one a second */
    double period = W.timeout_s / 8 < 1.0 ? W.timeout_s / 8 : 1.0;
    struct timespec nap = { (time_t)period, (long)((period - (double)(time_t)period) * 1e9) };
    /* A nap far longer than asked means this process was stopped (SIGSTOP)
     * or the machine suspended: its own waits count from the wake-up, so
     * that a stopped rank, continued, does not blame its peers. */
    long long last = now_ns(), woke = last, late = (long long)(period * 1e9) + 1000000000LL;
    for (;;) {
        nanosleep(&nap, NULL);
        long long t = now_ns();
        if (t - last > late) woke = t;
        last = t;
        long long since = atomic_load_explicit(&W.since_ns, memory_order_acquire);
        if (since == 0) continue;
        long long waited = t - (since > woke ? since : woke);
        /* still the same wait once more (its text is stable while it lasts) */
        if (waited > limit && atomic_load_explicit(&W.since_ns, memory_order_acquire) == since)
            report_and_abort((double)waited * 1e-9);
    }
    return NULL;
}

void wf_watch_start(const wf_ctx *c, double timeout_s) {
    W.c = c;
    W.timeout_s = timeout_s;
    /* signals go to the main thread, whose waits they may interrupt */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    int rc = pthread_create(&t, &attr, watch, NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) wf_fatal(c, "pthread_create", WF_WHERE, "cannot start the watchdog thread: %s", strerror(rc));
}
