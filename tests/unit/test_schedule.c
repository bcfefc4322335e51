/* test_schedule.c: every schedule kind over a grid of pipeline sizes verifies,
 * runs each compute op exactly once, reserves the expected activation slots and
 * matches the bubble closed forms; plus the p=4, m=8 timelines. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "verify.h"

#include "check.h"

static int min_int(int a, int b) { return a < b ? a : b; }
static double absd(double x) { return x < 0 ? -x : x; }

/* Each (microbatch, chunk) of the stage: FWD once, and BWD once or
 * BWD_INPUT and BWD_WEIGHT once each; no op for a chunk living elsewhere. */
static int ops_once(const schedule *s, int st, char *why, size_t len)
{
    int keys = s->micro * s->chunks;
    int *cnt = calloc((size_t)keys * 4, sizeof(int));
    int ok = 1;
    for (int i = 0; i < s->n[st]; i++) {
        const sched_instr *in = &s->ins[st][i];
        if (in->op > SI_BWD_WEIGHT) continue;
        if (in->chunk % s->stages != st || in->m >= s->micro) {
            snprintf(why, len, "#%d runs m%d c%d, not this stage's", i, in->m, in->chunk);
            ok = 0;
            break;
        }
        cnt[(in->m * s->chunks + in->chunk) * 4 + in->op]++;
    }
    for (int m = 0; ok && m < s->micro; m++)
        for (int c = st; ok && c < s->chunks; c += s->stages) {
            int *k = &cnt[(m * s->chunks + c) * 4];
            int want_bwd = s->split_backward ? 0 : 1, want_split = s->split_backward ? 1 : 0;
            if (k[SI_FWD] != 1 || k[SI_BWD] != want_bwd || k[SI_BWD_INPUT] != want_split ||
                k[SI_BWD_WEIGHT] != want_split) {
                snprintf(why, len, "m%d c%d: FWD %d, BWD %d, BWD_INPUT %d, BWD_WEIGHT %d", m, c,
                         k[SI_FWD], k[SI_BWD], k[SI_BWD_INPUT], k[SI_BWD_WEIGHT]);
                ok = 0;
            }
        }
    free(cnt);
    return ok;
}

static double closed_1f1b(int p, int m) { return (double)(p - 1) / (m + p - 1); }

static int count_op(const sched_instr *ins, int n, sched_op op)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += ins[i].op == op;
    return k;
}

/* PipeDream-2BW without flush: the unrolled prologue + steady + steady +
 * epilogue runs every (microbatch, stage) of three batches once, with each
 * batch's OPTIM right after its last backward; the steady step runs batch 1's
 * backwards and the first p - st - 1 forwards of batch 2; the next batch's
 * forwards start before this batch's backwards end (no flush); slots repeat
 * with the batch; the steady-state bubble is 0. */
static void twobw_case(int p, int m, int tie)
{
    char err[1024];
    schedule s, u;
    int rc = schedule_build(&s, SCHED_2BW, p, m, 1, err, sizeof err);
    if (rc == 0 && tie) rc = schedule_tie_2bw(&s, err, sizeof err);
    check(rc == 0, "2bw p=%d m=%d%s builds%s%s", p, m, tie ? " tied" : "", rc ? ": " : "", rc ? err : "");
    if (rc) return;
    rc = schedule_verify(&s, err, sizeof err);
    check(rc == 0, "2bw p=%d m=%d%s: prologue + steady + steady + epilogue verifies%s%s", p, m,
          tie ? " tied" : "", rc ? ": " : "", rc ? err : "");
    if (schedule_unroll_2bw(&s, &u) != 0) {
        check(0, "2bw p=%d m=%d unrolls", p, m);
        schedule_free(&s);
        return;
    }
    int once = 1, optim_ok = 1, steady_ok = 1, no_flush = p == 1, slots_ok = 1;
    for (int st = 0; st < p; st++) {
        int *f = calloc((size_t)3 * m, sizeof(int)), *b = calloc((size_t)3 * m, sizeof(int));
        int batch = 0, last_bwd0 = -1, first_fwd1 = -1;
        for (int i = 0; i < u.n[st]; i++) {
            const sched_instr *in = &u.ins[st][i];
            if (in->op == SI_FWD && in->m < 3 * m) f[in->m]++;
            if (in->op == SI_BWD && in->m < 3 * m) {
                b[in->m]++;
                optim_ok &= in->m / m == batch;  /* no backward of batch b after OPTIM b */
            }
            if (in->op == SI_OPTIM) {
                for (int k = batch * m; k < (batch + 1) * m; k++) optim_ok &= b[k] == 1;
                batch++;
            }
            if (in->op == SI_BWD && in->m == m - 1) last_bwd0 = i;
            if (in->op == SI_FWD && in->m == m && first_fwd1 < 0) first_fwd1 = i;
        }
        for (int k = 0; k < 3 * m; k++) once &= f[k] == 1 && b[k] == 1;
        optim_ok &= batch == 3;
        if (st == 0 && p > 1) no_flush = first_fwd1 >= 0 && first_fwd1 < last_bwd0;
        int next = 0, bwd_other = 0;
        for (int i = 0; i < s.n[st]; i++) {
            next += s.ins[st][i].op == SI_FWD && s.ins[st][i].m >= 2 * m;
            bwd_other += s.ins[st][i].op == SI_BWD && s.ins[st][i].m / m != 1;
        }
        steady_ok &= next == p - st - 1 && bwd_other == 0 && count_op(s.ins[st], s.n[st], SI_OPTIM) == 1 &&
                     count_op(s.epi[st], s.nepi[st], SI_FWD) + count_op(s.pro[st], s.npro[st], SI_FWD) == m;
        int w = p - st;
        slots_ok &= s.slots[st] >= w && s.slots[st] <= m && (m % w != 0 || s.slots[st] == w);
        free(f);
        free(b);
    }
    check(once && optim_ok, "2bw p=%d m=%d: three batches, each (microbatch, stage) once, OPTIM after "
          "each batch's last backward", p, m);
    check(steady_ok, "2bw p=%d m=%d: the steady step finishes batch 1 and runs the first p-st-1 "
          "forwards of batch 2", p, m);
    check(no_flush, "2bw p=%d m=%d: stage 0 starts batch 1 before batch 0's last backward (no flush)", p, m);
    check(slots_ok, "2bw p=%d m=%d: slots per stage p-st (when it divides m), at most m", p, m);
    double bub = schedule_bubble(&s);
    check(absd(bub) < 1e-12, "2bw p=%d m=%d: steady-state bubble %.6f = 0 (1f1b with a flush: %.6f)",
          p, m, bub, closed_1f1b(p, m));
    if (tie) {
        int t0 = count_op(s.ins[0], s.n[0], SI_SEND_TIED) + count_op(s.ins[0], s.n[0], SI_RECV_TIED);
        int tl = count_op(s.ins[p - 1], s.n[p - 1], SI_SEND_TIED) + count_op(s.ins[p - 1], s.n[p - 1], SI_RECV_TIED);
        check(t0 == 2 && tl == 2 && count_op(s.pro[0], s.npro[0], SI_SEND_TIED) == 1,
              "2bw p=%d m=%d tied: stage 0 and the last stage exchange wte gradient and weights "
              "each step, the prologue sends one version", p, m);
    }
    schedule_free(&u);
    schedule_free(&s);
}

static void grid_case(sched_kind kind, int p, int m, int v)
{
    char err[1024], why[256] = "";
    schedule s;
    const char *name = sched_name(kind);
    int rc = schedule_build(&s, kind, p, m, v, err, sizeof err);
    check(rc == 0, "%s p=%d m=%d v=%d builds%s%s", name, p, m, v, rc ? ": " : "", rc ? err : "");
    if (rc) return;

    rc = schedule_verify(&s, err, sizeof err);
    check(rc == 0, "%s p=%d m=%d v=%d verifies%s%s", name, p, m, v, rc ? ": " : "", rc ? err : "");

    int once = 1, optim = 1;
    for (int st = 0; st < p; st++) {
        if (!ops_once(&s, st, why, sizeof why)) {
            once = 0;
            break;
        }
        optim &= s.n[st] > 0 && s.ins[st][s.n[st] - 1].op == SI_OPTIM;
    }
    check(once && optim, "%s p=%d m=%d v=%d: every stage runs each compute op once, ends with "
          "OPTIM%s%s", name, p, m, v, why[0] ? ": " : "", why);

    /* expected slots per stage */
    int slots_ok = 1;
    char got[128] = "", *g = got;
    for (int st = 0; st < p; st++) {
        int want;
        if (kind == SCHED_GPIPE) want = m;
        else if (kind == SCHED_INTERLEAVED) want = min_int(m * v, 2 * (p - st - 1) + (v - 1) * p + 1);
        else want = min_int(m, p - st); /* 1f1b, 2bw; zb-h1 equal to 1f1b */
        slots_ok &= s.slots[st] == want;
        g += snprintf(g, sizeof got - (size_t)(g - got), "%s%d", st ? "," : "", s.slots[st]);
    }
    check(slots_ok, "%s p=%d m=%d v=%d: slots per stage [%s] as expected", name, p, m, v, got);
    int bufs_ok = 1;
    for (int st = 0; st < p; st++) bufs_ok &= p == 1 ? s.bufs[st] == 0 : s.bufs[st] >= 1;
    check(bufs_ok, "%s p=%d m=%d v=%d: message buffers %s", name, p, m, v,
          p == 1 ? "none on one stage" : "at least one per stage");

    double b = schedule_bubble(&s), want;
    const char *form;
    if (kind == SCHED_INTERLEAVED) {
        want = (double)(p - 1) / (v * m + p - 1);
        form = "(p-1)/(v*m+p-1)";
    } else if (kind == SCHED_ZBH1) {
        want = (double)(2 * p - 2) / (3 * m + 2 * p - 2);
        form = "(2p-2)/(3m+2p-2)";
    } else {
        want = closed_1f1b(p, m);
        form = "(p-1)/(m+p-1)";
    }
    check(absd(b - want) < 1e-12, "%s p=%d m=%d v=%d: bubble %.6f = %s = %.6f", name, p, m, v,
          b, form, want);
    if ((kind == SCHED_INTERLEAVED || kind == SCHED_ZBH1) && p > 1)
        check(b < closed_1f1b(p, m), "%s p=%d m=%d v=%d: bubble %.6f < 1f1b's %.6f", name, p, m,
              v, b, closed_1f1b(p, m));
    schedule_free(&s);
}

/* Splits a printed timeline into cells: rows[st][t]. */
static int parse_timeline(const char *text, int p, char cells[][64][8], int *cols)
{
    const char *line = strchr(text, '\n');
    int rows = 0;
    *cols = 0;
    while (line && rows < p) {
        line++;
        const char *bar = strchr(line, '|');
        const char *end = strchr(line, '\n');
        if (!bar || !end) break;
        int t = 0;
        for (const char *c = bar + 1; c < end && t < 64;) {
            while (c < end && *c == ' ') c++;
            if (c >= end) break;
            int n = 0;
            while (c < end && *c != ' ' && n < 7) cells[rows][t][n++] = *c++;
            cells[rows][t][n] = 0;
            t++;
        }
        if (rows == 0) *cols = t;
        else if (t != *cols) return -1;
        rows++;
        line = end;
    }
    return rows;
}

static char *capture_timeline(const schedule *s)
{
    FILE *f = tmpfile();
    if (!f) return NULL;
    schedule_timeline(s, f);
    long n = ftell(f);
    char *buf = malloc((size_t)n + 1);
    rewind(f);
    if (buf) buf[fread(buf, 1, (size_t)n, f)] = 0;
    fclose(f);
    return buf;
}

static void timelines(void)
{
    static char cells[4][64][8];
    char err[512];
    schedule s;
    printf("\n-- timelines, p=4 m=8 (interleaved v=2) --\n");
    for (int k = 0; k < SCHED__COUNT; k++) {
        int v = k == SCHED_INTERLEAVED ? 2 : 1;
        if (schedule_build(&s, (sched_kind)k, 4, 8, v, err, sizeof err) != 0) {
            check(0, "build %s: %s", sched_name((sched_kind)k), err);
            continue;
        }
        char *text = capture_timeline(&s);
        printf("%s", text ? text : "(no timeline)\n");
        int cols = 0, rows = text ? parse_timeline(text, 4, cells, &cols) : -1;
        if (k == SCHED_1F1B) {
            check(rows == 4 && cols == 33, "1f1b p=4 m=8 timeline: 4 rows of 33 columns (got %d x %d)",
                  rows, cols);
            check(rows == 4 && !strcmp(cells[0][0], "F0") && !strcmp(cells[0][3], "F3") &&
                  !strcmp(cells[0][4], "."), "1f1b timeline: stage 0 runs F0..F3, then idles");
            check(rows == 4 && !strcmp(cells[3][2], ".") && !strcmp(cells[3][3], "F0") &&
                  !strcmp(cells[3][4], "B0") && !strcmp(cells[3][5], "B0") &&
                  !strcmp(cells[3][6], "F1"), "1f1b timeline: stage 3 runs F0 at t=3, B0 at t=4-5, F1 at t=6");
            check(rows == 4 && !strcmp(cells[0][10], "B0") && !strcmp(cells[0][12], "F4") &&
                  !strcmp(cells[0][32], "B7"), "1f1b timeline: stage 0 B0 at t=10, F4 at t=12, ends with B7");
        }
        if (k == SCHED_ZBH1)
            check(text && strstr(text, "W7") && strstr(text, "B=1 W=1"),
                  "zb-h1 timeline shows W cells and the split costs");
        if (k == SCHED_INTERLEAVED)
            check(rows == 4 && !strcmp(cells[0][0], "F0a") && !strcmp(cells[0][4], "F0b"),
                  "interleaved timeline names the local chunk: F0a, then F0b at t=4");
        free(text);
        schedule_free(&s);
    }
}

int main(void)
{
    char err[512];
    schedule s;

    /* names */
    for (int k = 0; k < SCHED__COUNT; k++) {
        sched_kind back;
        check(sched_parse(sched_name((sched_kind)k), &back) == 0 && back == (sched_kind)k,
              "sched_parse(sched_name(%d) = \"%s\") round-trips", k, sched_name((sched_kind)k));
    }
    sched_kind kk;
    check(sched_parse("2bw", &kk) == 0 && kk == SCHED_2BW, "\"2bw\" parses as pipedream-2bw");
    check(sched_parse("1f2b", &kk) == -1, "unknown schedule name is rejected");

    /* the grid (2BW below) */
    for (int k = 0; k < SCHED__COUNT; k++)
        for (int p = 1; p <= 4 && k != SCHED_2BW; p++) {
            int ms[4] = {1, p, 2 * p + 1, 8};
            for (int i = 0; i < 4; i++) {
                if (i > 0 && ms[i] == ms[i - 1]) continue;
                if (k == SCHED_INTERLEAVED && ms[i] % p != 0) continue;
                grid_case((sched_kind)k, p, ms[i], k == SCHED_INTERLEAVED ? 2 : 1);
            }
        }
    /* interleaved with more chunks */
    grid_case(SCHED_INTERLEAVED, 4, 8, 3);
    grid_case(SCHED_INTERLEAVED, 3, 6, 4);

    /* schedule_peak_slots (weft plan's memory bound) counts the slots of the
     * schedule schedule_build makes, from its compute orders alone: equal to
     * the built schedule's largest slots[] on every kind but 2BW, over
     * stage counts 1..8 and microbatches 1..3 * stages (the short, the
     * exactly-full and the steady-state pipelines) */
    int slot_cases = 0, slot_equal = 0;
    for (int k = 0; k < SCHED__COUNT; k++)
        for (int p = 1; p <= 8 && k != SCHED_2BW; p++)
            for (int m = 1; m <= 3 * p; m++) {
                int v = k == SCHED_INTERLEAVED ? 2 : 1;
                if (k == SCHED_INTERLEAVED && m % p != 0) continue;
                if (schedule_build(&s, (sched_kind)k, p, m, v, err, sizeof err) != 0) continue;
                int built = 0, first = s.slots[0], last = s.slots[p - 1];
                for (int st = 0; st < p; st++)
                    if (s.slots[st] > built) built = s.slots[st];
                schedule_free(&s);
                int peak = schedule_peak_slots((sched_kind)k, p, m, v);
                int s0 = schedule_stage_slots((sched_kind)k, p, m, v, 0);
                int sl = schedule_stage_slots((sched_kind)k, p, m, v, p - 1);
                slot_cases++;
                if (peak == built && s0 == first && sl == last) slot_equal++;
                else check(0, "schedule_peak_slots(%s, %d, %d, %d) = %d (stage 0: %d, last: %d), the built "
                           "schedule has %d (%d, %d)", sched_name((sched_kind)k), p, m, v, peak, s0, sl, built,
                           first, last);
            }
    check(slot_cases > 100 && slot_equal == slot_cases,
          "schedule_peak_slots and schedule_stage_slots (first, last stage) equal the built schedule's "
          "slots in %d of %d cases", slot_equal, slot_cases);
    check(schedule_peak_slots(SCHED_INTERLEAVED, 4, 6, 2) == -1 && schedule_peak_slots(SCHED_2BW, 4, 8, 1) == -1,
          "schedule_peak_slots refuses what schedule_build refuses (interleaved m=6 p=4) and 2BW");

    /* argument errors */
    err[0] = 0;
    int rc = schedule_build(&s, SCHED_INTERLEAVED, 4, 6, 2, err, sizeof err);
    check(rc == -1 && strstr(err, "micro % stages == 0") && strstr(err, "micro = 6"),
          "interleaved p=4 m=6 is rejected naming the rule: %s", err);
    rc = schedule_build(&s, SCHED_1F1B, 4, 8, 2, err, sizeof err);
    check(rc == -1 && strstr(err, "virt"), "1f1b with virt=2 is rejected: %s", err);
    rc = schedule_build(&s, SCHED_GPIPE, 0, 8, 1, err, sizeof err);
    check(rc == -1 && strstr(err, "stages = 0"), "gpipe with 0 stages is rejected: %s", err);

    /* 2BW without flush, weights one step stale; micro >= stages */
    schedule a, b;
    for (int p = 1; p <= 5; p++) {
        int ms[4] = {p, p + 1, 2 * p + 1, 8};
        for (int i = 0; i < 4; i++) {
            if (ms[i] < p || (i > 0 && ms[i] == ms[i - 1])) continue;
            twobw_case(p, ms[i], 0);
            if (p > 1) twobw_case(p, ms[i], 1);
        }
    }
    rc = schedule_build(&s, SCHED_2BW, 4, 3, 1, err, sizeof err);
    check(rc == -1 && strstr(err, "at least stages = 4"), "2bw p=4 m=3 is rejected: %s", err);
    if (schedule_build(&a, SCHED_2BW, 4, 8, 1, err, sizeof err) == 0) {
        check(a.weight_delay == 1 && a.pro && a.epi, "pipedream-2bw: weight_delay 1, prologue and epilogue");
        schedule_free(&a);
    }

    /* zb-h1 peak equals 1f1b's and its bubble is smaller at p=4, m=8 */
    if (schedule_build(&a, SCHED_ZBH1, 4, 8, 1, err, sizeof err) == 0 &&
        schedule_build(&b, SCHED_1F1B, 4, 8, 1, err, sizeof err) == 0) {
        int pa = 0, pb = 0;
        for (int st = 0; st < 4; st++) {
            if (a.slots[st] > pa) pa = a.slots[st];
            if (b.slots[st] > pb) pb = b.slots[st];
        }
        check(pa == pb && schedule_bubble(&a) < schedule_bubble(&b),
              "zb-h1 p=4 m=8: peak slots %d = 1f1b's %d, bubble %.4f < %.4f", pa, pb,
              schedule_bubble(&a), schedule_bubble(&b));
        schedule_free(&a);
        schedule_free(&b);
    }

    /* the instruction dump of a small 1f1b */
    if (schedule_build(&s, SCHED_1F1B, 2, 3, 1, err, sizeof err) == 0) {
        FILE *f = tmpfile();
        char text[4096] = "";
        if (f) {
            schedule_dump(&s, f);
            rewind(f);
            text[fread(text, 1, sizeof text - 1, f)] = 0;
            fclose(f);
        }
        printf("%s", text);
        check(strstr(text, "stage 1 (1 activation slots") &&
              strstr(text, "#3 SENDRECV(send ACT m1 c1 to rank 1, recv GRAD m0 c0 from rank 1)") &&
              strstr(text, "#3 SENDRECV(send GRAD m0 c0 to rank 0, recv ACT m1 c1 from rank 0)") &&
              strstr(text, "OPTIM"),
              "1f1b p=2 m=3: steady state exchanges via SENDRECV on both stages");
        schedule_free(&s);
    }

    timelines();

    printf("\n-- bubble fractions, p=4 m=8 (interleaved v=2) --\n");
    for (int k = 0; k < SCHED__COUNT; k++)
        if (schedule_build(&s, (sched_kind)k, 4, 8, k == SCHED_INTERLEAVED ? 2 : 1, err,
                           sizeof err) == 0) {
            printf("%-14s makespan %3ld  bubble %.4f\n", sched_name((sched_kind)k),
                   schedule_makespan(&s), schedule_bubble(&s));
            schedule_free(&s);
        }

    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
