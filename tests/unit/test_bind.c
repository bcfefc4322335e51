/* test_bind: with more ranks on a node than cores, runtime/cpu/bind.c deals
 * the ranks to the cores so that every run of neighbouring stages (a stage's
 * ranks compute together; a pipeline's fill, drain and steady state keep
 * neighbouring stages busy at once) sits on the cores as evenly as its ranks
 * allow: no core holds more than ceil(run's ranks / cores) of them.  Checked
 * for stages outermost in the mesh (a stage's ranks one block) and innermost
 * (a stage's ranks strided), for 1 to 5 cores; and weft/bind.h's rule,
 * whether to bind, case by case. */
#include <stdio.h>

#include "internal.h"
#include "weft/bind.h"

static int failures, checks;

/* stage[r] for n node-local ranks of pp stages; outer: rank r in stage
 * r / (n / pp), else r % pp */
static void layout(int *stage, int n, int pp, int outer) {
    for (int r = 0; r < n; r++) stage[r] = outer ? r / (n / pp) : r % pp;
}

static void check(int n, int pp, int outer, int cores) {
    int stage[64], slot[64];
    layout(stage, n, pp, outer);
    int ok = 1;
    for (int r = 0; r < n; r++) {
        slot[r] = wf_bind_slot(stage, n, r, cores);
        ok &= slot[r] >= 0 && slot[r] < cores;
    }
    /* every run of stages a..b: at most ceil(its ranks / cores) on a core */
    for (int a = 0; a < pp && ok; a++)
        for (int b = a; b < pp && ok; b++) {
            int on[8] = { 0 }, ranks = 0, most = 0;
            for (int r = 0; r < n; r++)
                if (stage[r] >= a && stage[r] <= b) on[slot[r]]++, ranks++;
            for (int k = 0; k < cores; k++) most = on[k] > most ? on[k] : most;
            ok &= most <= (ranks + cores - 1) / cores;
        }
    checks++;
    failures += !ok;
    printf("%s %2d ranks, pp %d (%s), %d cores: slots", ok ? "ok  " : "FAIL", n, pp,
           outer ? "outermost" : "innermost", cores);
    for (int r = 0; r < n; r++) printf(" %d", slot[r]);
    printf("\n");
}

int main(void) {
    static const int layouts[][2] = { { 4, 2 }, { 4, 4 }, { 6, 2 }, { 8, 2 }, { 8, 4 }, { 8, 8 }, { 4, 1 }, { 12, 3 } };
    for (int i = 0; i < (int)(sizeof layouts / sizeof layouts[0]); i++)
        for (int cores = 1; cores <= 5; cores++)
            for (int outer = 0; outer < 2; outer++) check(layouts[i][0], layouts[i][1], outer, cores);
    /* out of range */
    int st[2] = { 0, 0 };
    checks++;
    if (wf_bind_slot(st, 2, 2, 2) != -1 || wf_bind_slot(st, 2, 0, 0) != -1) {
        failures++;
        printf("FAIL out-of-range arguments not refused\n");
    }
    /* weft/bind.h's rule, which the runtime binds by and simulate prices:
     * { mode, ranks, cores, stages on the node, tp, threads, decision } */
    static const int rule[][7] = {
        { WF_BIND_AUTO, 4, 4, 2, 1, 1, WF_BIND_SPREAD },     /* a core a rank */
        { WF_BIND_ALL, 4, 4, 1, 1, 1, WF_BIND_SPREAD },
        { WF_BIND_AUTO, 4, 2, 2, 1, 1, WF_BIND_BOUND },      /* a pipeline, oversubscribed */
        { WF_BIND_OFF, 4, 2, 2, 1, 1, WF_BIND_NOT_ASKED },
        { WF_BIND_AUTO, 4, 2, 1, 1, 1, WF_BIND_ONE_STAGE },  /* one stage on the node */
        { WF_BIND_STAGES, 4, 2, 1, 1, 1, WF_BIND_ONE_STAGE },
        { WF_BIND_ALL, 4, 2, 1, 1, 1, WF_BIND_BOUND },
        { WF_BIND_AUTO, 4, 2, 2, 2, 1, WF_BIND_TP },         /* tensor parallel */
        { WF_BIND_STAGES, 4, 2, 2, 2, 1, WF_BIND_BOUND },
        { WF_BIND_ALL, 4, 2, 2, 2, 1, WF_BIND_BOUND },
        { WF_BIND_ALL, 4, 2, 2, 1, 2, WF_BIND_THREADS },     /* threads a rank */
    };
    for (int i = 0; i < (int)(sizeof rule / sizeof rule[0]); i++) {
        const int *r = rule[i];
        int got = wf_bind_decide(r[0], r[1], r[2], r[3], r[4], r[5]);
        checks++;
        failures += got != r[6];
        printf("%s cluster.bind = %s, %d ranks on %d cores, %d stage(s), tp %d, %d thread(s): %d (want %d)\n",
               got == r[6] ? "ok  " : "FAIL", wf_bind_name(r[0]), r[1], r[2], r[3], r[4], r[5], got, r[6]);
    }
    /* the names round-trip, an unknown one is refused */
    for (int m = 0; m < WF_BIND_MODES; m++) {
        checks++;
        failures += wf_bind_mode(wf_bind_name(m)) != m;
    }
    checks++;
    failures += wf_bind_mode("force") != -1 || wf_bind_mode(NULL) != -1;
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
