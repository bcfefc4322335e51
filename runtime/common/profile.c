/* profile.c: --profile, the step's time per op class (weft/rt.h's
 * WF_PROF_*), printed in the run summary.
 *
 * One clock switches between classes: the generated code names the class of
 * each op before calling it, the runtime names its own phases (optimizer,
 * every blocking MPI call as communication, the rest as other), and the time
 * since the last switch goes to the class that was running.  On CUDA each
 * switch first waits for the device (wf_backend_sync), so the time is the
 * device's, at the price of serialising the step; graphs are off then
 * (train.c).  Off (the default), a switch is one branch. */
#define _POSIX_C_SOURCE 199309L

#include <stdlib.h>
#include <time.h>

#include "internal.h"

static const char *const NAMES[WF_PROF_CLASSES] = {
    "gemm", "attention", "norm", "elementwise", "classifier", "optimizer", "comm wait", "other",
};

static struct {
    int on;
    int done;  /* stopped at the end of training: the summary prints */
    int cur;
    double since;
    double seconds[WF_PROF_CLASSES];
} P;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void switch_to(int cls) {
    double t = now_s();
    P.seconds[P.cur] += t - P.since;
    P.since = t;
    P.cur = cls;
}

void wf_prof(wf_ctx *c, int cls) {
    if (!P.on || cls == P.cur) return;
    wf_backend_sync(c);
    switch_to(cls);
}

int wf_prof_comm_begin(void) {
    if (!P.on) return -1;
    int prev = P.cur;
    if (prev != WF_PROF_COMM) switch_to(WF_PROF_COMM);
    return prev;
}

void wf_prof_comm_end(int prev) {
    if (prev >= 0 && prev != WF_PROF_COMM) switch_to(prev);
}

void wf_prof_start(int on) {
    P.on = on;
    P.cur = WF_PROF_OTHER;
    P.since = now_s();
    for (int k = 0; k < WF_PROF_CLASSES; k++) P.seconds[k] = 0;
}

void wf_prof_stop(wf_ctx *c) {
    if (!P.on) return;
    wf_prof(c, WF_PROF_OTHER);
    switch_to(WF_PROF_OTHER);
    P.on = 0;
    P.done = 1;
}

/* Every rank calls it: rank 0 prints one line per rank (ranks differ:
 * pipeline stages, the last one's head), milliseconds per step and each
 * class's share of the measured time. */
void wf_prof_summary(wf_ctx *c, int steps) {
    if (!P.done) return;
    double *all = wf_is_root(c) ? malloc(sizeof(double) * WF_PROF_CLASSES * (size_t)c->world) : NULL;
    WF_MPI(c, MPI_Gather(P.seconds, WF_PROF_CLASSES, MPI_DOUBLE, all, WF_PROF_CLASSES, MPI_DOUBLE, 0,
                         MPI_COMM_WORLD));
    if (!all) return;
    for (int r = 0; r < c->world; r++) {
        const double *s = all + (long)r * WF_PROF_CLASSES;
        double total = 0;
        for (int k = 0; k < WF_PROF_CLASSES; k++) total += s[k];
        char line[512];
        int len = snprintf(line, sizeof line, "profile rank %d, ms/step (share):", r);
        for (int k = 0; k < WF_PROF_CLASSES && len < (int)sizeof line; k++)
            len += snprintf(line + len, sizeof line - len, " %s %.2f (%.0f%%)%s", NAMES[k],
                            steps > 0 ? 1000.0 * s[k] / steps : 0.0, total > 0 ? 100.0 * s[k] / total : 0.0,
                            k + 1 < WF_PROF_CLASSES ? "," : "");
        wf_log(c, "%s\n", line);
    }
    free(all);
}
