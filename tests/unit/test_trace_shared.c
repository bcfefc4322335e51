/* test_trace_shared.c: timelines of ranks that share fewer cores than they
 * are (trace_shared.h).  With a core per rank the trace is trace_from_costs's;
 * a two-stage GPipe on one core has the makespan worked out by hand below,
 * and one with its ranks placed on 2 cores; the placed slowdown is the
 * expectation counted over every choice of computing ranks;
 * with waiting ranks asking as much as computing ones every op is slowed by
 * ranks / cores; one stage (nothing waits) is slowed by ranks / cores
 * whatever a waiting rank costs; in between the makespan lies between the
 * unshared one and ranks / cores times it, for every schedule kind. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "schedule.h"
#include "trace.h"
#include "trace_shared.h"

#include "check.h"

/* relative tolerance: the shared simulation subtracts elapsed work from
 * what is left (a few ulps per event, a few hundred events) */
#define REL 1e-9

static int close_to(double a, double b) { return fabs(a - b) <= REL * fabs(b) + 1e-12; }

typedef struct {
    sched_kind kind;
    int stages, micro, virt;
} shape;

static const shape SHAPES[] = {
    { SCHED_GPIPE, 2, 2, 1 }, { SCHED_GPIPE, 4, 6, 1 }, { SCHED_1F1B, 4, 8, 1 },
    { SCHED_INTERLEAVED, 4, 8, 2 }, { SCHED_ZBH1, 4, 8, 1 }, { SCHED_2BW, 3, 4, 1 }, { SCHED_1F1B, 1, 4, 1 },
};

/* Costs that differ by chunk (the first and last chunks heavier, as with
 * the embedding and the head), and an optimizer step per stage. */
static double F[64], B[64], W[64], OPT[16];
static trace_costs costs_for(const schedule *s, double comm) {
    for (int k = 0; k < s->chunks; k++) {
        F[k] = 1.0 + (k == 0 ? 0.5 : 0) + (k == s->chunks - 1 ? 0.25 : 0);
        B[k] = 2 * F[k] + (k == s->chunks - 1 ? 1.0 : 0);
        W[k] = 0.5 * F[k];
    }
    for (int st = 0; st < s->stages; st++) OPT[st] = 0.75;
    return (trace_costs){ F, B, W, comm, OPT };
}

static double makespan_of(const schedule *s, const trace_costs *c, const trace_share *sh) {
    trace t = { 0 };
    int rc = sh ? trace_from_costs_shared(&t, s, c, sh) : trace_from_costs(&t, s, c);
    double m = rc == 0 ? trace_makespan(&t) : -1;
    trace_free(&t);
    return m;
}

static void check_hand_worked(void) {
    /* GPipe, 2 stages of one rank, 2 microbatches, F 1, B 2, no messages'
     * cost, one core, waiting ranks free.  Unshared: stage 0 F0 [0,1] F1
     * [1,2], stage 1 F0 [1,2] F1 [2,3], B [3,5] [5,7], stage 0 B [5,7]
     * [7,9]: 9.  Shared: F0 alone [0,1]; stage 0's F1 and stage 1's F0 at
     * half speed [1,3]; stage 1's F1 alone [3,4] and its first B [4,6];
     * stage 1's second B and stage 0's first at half speed [6,10]; stage 0's
     * last B alone [10,12]: 12 (the core never idles: 2 x (2 + 4) of work).
     * With waiting ranks asking a full share, half speed throughout: 18. */
    schedule s;
    char err[256];
    if (schedule_build(&s, SCHED_GPIPE, 2, 2, 1, err, sizeof err) != 0) {
        check(0, "gpipe 2 x 2 builds: %s", err);
        return;
    }
    double f[2] = { 1, 1 }, b[2] = { 2, 2 }, w[2] = { 0, 0 };
    trace_costs c = { f, b, w, 0, NULL };
    trace_share free_wait = { 1, NULL, 0, 0, 0 }, full_wait = { 1, NULL, 1, 0, 0 };
    double m0 = makespan_of(&s, &c, NULL), m1 = makespan_of(&s, &c, &free_wait), m2 = makespan_of(&s, &c, &full_wait);
    check(close_to(m0, 9), "gpipe 2 stages x 2 microbatches, a core each: makespan %g (9)", m0);
    check(close_to(m1, 12), "the same on one core, waiting free: %g (12, by hand)", m1);
    check(close_to(m2, 18), "the same on one core, a waiting rank asking a full share: %g (18)", m2);
    schedule_free(&s);
}

static void check_shapes(void) {
    for (size_t i = 0; i < sizeof SHAPES / sizeof *SHAPES; i++) {
        const shape *h = &SHAPES[i];
        schedule s;
        char err[256];
        if (schedule_build(&s, h->kind, h->stages, h->micro, h->virt, err, sizeof err) != 0) {
            check(0, "%s p=%d m=%d builds: %s", sched_name(h->kind), h->stages, h->micro, err);
            continue;
        }
        /* 2 ranks per stage */
        double ranks[16];
        for (int st = 0; st < h->stages; st++) ranks[st] = 2;
        double R = 2.0 * h->stages;
        trace_costs with_comm = costs_for(&s, 0.25), no_comm = costs_for(&s, 0);
        double u = makespan_of(&s, &with_comm, NULL), u0 = makespan_of(&s, &no_comm, NULL);
        /* a core per rank */
        trace_share own = { R, ranks, 0.05, 1, 0 };
        double m = makespan_of(&s, &with_comm, &own);
        check(close_to(m, u), "%s p=%d m=%d: a core per rank, makespan %g as trace_from_costs's %g",
              sched_name(h->kind), h->stages, h->micro, m, u);
        /* waiting asks a full share: every op slowed by R / cores */
        trace_share full = { 1, ranks, 1, 1, 0 };
        double mf = makespan_of(&s, &no_comm, &full);
        check(close_to(mf, u0 * R), "%s p=%d m=%d: %g ranks on one core, waiting at a full share: %g = %g x %g",
              sched_name(h->kind), h->stages, h->micro, R, mf, u0, R);
        /* in between: 1 <= stretch <= max(1, R / cores); 1 when the ranks
         * have a core each, R / cores with one stage (nothing waits), else
         * strictly below R / cores (bubbles) */
        for (int i = 0; i < 9; i++) {
            int cores = i % 3 + 1;  /* spread, then placed, then bound */
            trace_share mid = { cores, ranks, 0.05, i >= 3 && i < 6, i >= 6 };
            double ms = makespan_of(&s, &with_comm, &mid), x = ms / u, top = fmax(1, R / cores);
            /* bound, a core holds ceil(R / cores) ranks: 2 on 3 cores (4 ranks) */
            if (i >= 6) top = fmax(1, ceil(R / cores));
            int lo = x >= 1 - REL, hi = x <= top * (1 + REL);
            int exact = R <= cores ? close_to(x, 1) : h->stages == 1 ? close_to(x, top) : x < top * (1 - 1e-3);
            check(lo && hi && exact, "%s p=%d m=%d, %g ranks on %d cores%s: stretch %.4f in [1, %g]%s",
                  sched_name(h->kind), h->stages, h->micro, R, cores, i >= 6 ? " bound" : i >= 3 ? " placed" : "", x, top,
                  R <= cores ? ", = 1" : h->stages == 1 ? ", = ranks / cores (nothing waits)" : ", below it");
        }
        schedule_free(&s);
    }
}

/* trace_placed_slowdown against counting every choice of the computing
 * ranks (bit masks; core of rank r: the evenly filled layout the function
 * assumes), and the hand-worked dp 2 x pp 2 case. */
static void check_placed(void) {
    for (int R = 1; R <= 9; R++)
        for (int C = 1; C <= 4; C++)
            for (int k = 1; k <= R; k++) {
                int core[16], n = 0;
                for (int c = 0, r = 0; c < C; c++)
                    for (int i = 0; i < R / C + (c < R % C); i++) core[r++] = c;
                double sum = 0;
                for (unsigned m = 0; m < 1u << R; m++) {
                    if (__builtin_popcount(m) != k) continue;
                    int on[4] = { 0 }, most = 0;
                    for (int r = 0; r < R; r++)
                        if (m >> r & 1 && ++on[core[r]] > most) most = on[core[r]];
                    sum += most, n++;
                }
                double e = trace_placed_slowdown(k, R, C), want = R <= C ? 1 : sum / n;
                if (!close_to(e, want)) check(0, "%d of %d ranks on %d cores: E[max] %g, counted %g", k, R, C, e, want);
            }
    check(close_to(trace_placed_slowdown(2, 4, 2), 4.0 / 3), "2 of 4 ranks computing on 2 cores: 4/3");
    /* GPipe, 2 stages of 2 ranks, one microbatch, F 1, B 2, 2 cores,
     * waiting free: one stage computes at a time (F, F B, B: 6 of work).
     * Spread, at full speed: 6; placed, every op 4/3 slower: 8. */
    schedule s;
    char err[256];
    if (schedule_build(&s, SCHED_GPIPE, 2, 1, 1, err, sizeof err) != 0) {
        check(0, "gpipe 2 x 1 builds: %s", err);
        return;
    }
    double f[2] = { 1, 1 }, b[2] = { 2, 2 }, w[2] = { 0, 0 }, ranks[2] = { 2, 2 };
    trace_costs c = { f, b, w, 0, NULL };
    trace_share spread = { 2, ranks, 0, 0, 0 }, placed = { 2, ranks, 0, 1, 0 };
    double m0 = makespan_of(&s, &c, &spread), m1 = makespan_of(&s, &c, &placed);
    check(close_to(m0, 6), "dp 2 x pp 2 gpipe on 2 cores, spread: makespan %g (6)", m0);
    check(close_to(m1, 8), "the same placed: %g (8 = 6 x 4/3)", m1);
    /* bound (ranks 0 1 | 2 3 on cores 0 1 | 0 1): each stage's pair on both
     * cores, full speed: 6; with waiting at 0.05, each computing rank shares
     * its core with one waiting rank, every op 1.05 slower: 6.3.  Stages of
     * 3 and 1 ranks (0 1 0 | 1): stage 0 alone has 2 on core 0, half speed,
     * stage 1 alone full: F0 2, F1 1, B1 2, B0 4: 9. */
    trace_share bound = { 2, ranks, 0, 0, 1 }, bound_w = { 2, ranks, 0.05, 1, 1 };
    double m2 = makespan_of(&s, &c, &bound), m3 = makespan_of(&s, &c, &bound_w);
    check(close_to(m2, 6), "the same bound in stage order: %g (6, as spread)", m2);
    check(close_to(m3, 6.3), "bound, waiting ranks at 0.05: %g (6.3 = 6 x 1.05)", m3);
    double uneven[2] = { 3, 1 };
    trace_share bound31 = { 2, uneven, 0, 0, 1 };
    double m4 = makespan_of(&s, &c, &bound31);
    check(close_to(m4, 9), "stages of 3 and 1 ranks bound on 2 cores: %g (9, by hand)", m4);
    check(trace_bound_slowdown(2, 4, 2) == 1 && trace_bound_slowdown(3, 6, 2) == 2 &&
              trace_bound_slowdown(4, 8, 2) == 2 && trace_bound_slowdown(2, 2, 2) == 1,
          "one stage alone bound: ceil(its ranks / cores)");
    schedule_free(&s);
}

int main(void) {
    check_hand_worked();
    check_placed();
    check_shapes();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
