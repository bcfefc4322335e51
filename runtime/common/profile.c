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
    int cur;   /* a class, WF_PROF_ENCODER or-ed in for a VLM's encoder ops */
    double since;
    double seconds[WF_PROF_CLASSES];
    double encoder;  /* the encoder's and projector's ops, whatever their class */
} P;

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void switch_to(int cls) {
    double t = now_s();
    P.seconds[P.cur & ~WF_PROF_ENCODER] += t - P.since;
    if (P.cur & WF_PROF_ENCODER) P.encoder += t - P.since;
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
    P.encoder = 0;
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
 * class's share of the measured time; where a VLM's encoder ran (stage 0),
 * a second line gives its and the projector's time (a part of the classes'
 * compute, gemm to classifier), as a share of the step and of that compute,
 * the measure weft simulate predicts (its "encoder" line). */
void wf_prof_summary(wf_ctx *c, int steps) {
    if (!P.done) return;
    enum { N = WF_PROF_CLASSES + 1 };  /* the classes, then the encoder's time */
    double mine[N];
    for (int k = 0; k < WF_PROF_CLASSES; k++) mine[k] = P.seconds[k];
    mine[WF_PROF_CLASSES] = P.encoder;
    double *all = wf_is_root(c) ? malloc(sizeof(double) * N * (size_t)c->world) : NULL;
    WF_MPI(c, MPI_Gather(mine, N, MPI_DOUBLE, all, N, MPI_DOUBLE, 0, MPI_COMM_WORLD));
    if (!all) return;
    for (int r = 0; r < c->world; r++) {
        const double *s = all + (long)r * N;
        double total = 0;
        for (int k = 0; k < WF_PROF_CLASSES; k++) total += s[k];
        char line[512];
        int len = snprintf(line, sizeof line, "profile rank %d, ms/step (share):", r);
        for (int k = 0; k < WF_PROF_CLASSES && len < (int)sizeof line; k++)
            len += snprintf(line + len, sizeof line - len, " %s %.2f (%.0f%%)%s", NAMES[k],
                            steps > 0 ? 1000.0 * s[k] / steps : 0.0, total > 0 ? 100.0 * s[k] / total : 0.0,
                            k + 1 < WF_PROF_CLASSES ? "," : "");
        wf_log(c, "%s\n", line);
        if (s[WF_PROF_CLASSES] <= 0) continue;
        double compute = 0;  /* the ops' classes: the runtime's optimizer, waits and the rest left out */
        for (int k = WF_PROF_GEMM; k <= WF_PROF_CLASSIFIER; k++) compute += s[k];
        wf_log(c, "profile rank %d encoder: vision encoder and projector %.2f ms/step, %.1f%% of the step, "
                  "%.1f%% of its compute (%.2f ms/step)\n", r, steps > 0 ? 1000.0 * s[WF_PROF_CLASSES] / steps : 0.0,
               total > 0 ? 100.0 * s[WF_PROF_CLASSES] / total : 0.0,
               compute > 0 ? 100.0 * s[WF_PROF_CLASSES] / compute : 0.0, steps > 0 ? 1000.0 * compute / steps : 0.0);
    }
    free(all);
}
