/* test_bind: with more ranks on a node than cores, runtime/cpu/bind.c deals
 * the ranks to the cores so that every run of neighbouring stages (a stage's
 * ranks compute together; a pipeline's fill, drain and steady state keep
 * neighbouring stages busy at once) sits on the cores as evenly as its ranks
 * allow: no core holds more than ceil(run's ranks / cores) of them.  Checked
 * for stages outermost in the mesh (a stage's ranks one block) and innermost
 * (a stage's ranks strided), for 1 to 5 cores. */
#include <stdio.h>

#include "internal.h"

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
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures != 0;
}
