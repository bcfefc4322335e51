/* test_scatter_gather.c: pipeline scatter/gather in the schedule.  Every
 * schedule kind with GATHERs after its receives verifies on stages x tp
 * ranks; then faults planted in one tp rank's copy of a list must be caught,
 * each with its own message:
 *   - one tp rank gathers two messages in the other order (the group's
 *     collective order differs);
 *   - one tp rank leaves a GATHER out (its group waits for it);
 *   - the GATHER moved before its receive (no slice yet);
 *   - the GATHER moved after the FWD that reads the message (not yet whole);
 *   - a tp rank sends its slice to another tp rank's peer (mismatch). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "verify.h"

#include "check.h"

static int count_op(const sched_instr *ins, int n, sched_op op)
{
    int k = 0;
    for (int i = 0; i < n; i++) k += ins[i].op == op;
    return k;
}

static int count_recvs(const sched_instr *ins, int n)
{
    return count_op(ins, n, SI_RECV_ACT) + count_op(ins, n, SI_RECV_GRAD) + count_op(ins, n, SI_SENDRECV);
}

/* index of the k-th instruction of kind op in the list, or -1 */
static int nth(const sched_instr *ins, int n, sched_op op, int k)
{
    for (int i = 0; i < n; i++)
        if (ins[i].op == op && k-- == 0) return i;
    return -1;
}

/* builds a 1f1b schedule, 2 stages x 4 microbatches, split across tp ranks */
static int build(schedule *s, int tp)
{
    char err[512];
    if (schedule_build(s, SCHED_1F1B, 2, 4, 1, err, sizeof err) != 0 ||
        schedule_scatter_gather(s, tp, err, sizeof err) != 0) {
        printf("build: %s\n", err);
        return -1;
    }
    return 0;
}

/* runs the planted copy; the message must contain `want` */
static void expect_fault(verify_tp *t, const char *what, const char *want)
{
    char err[1024] = "";
    int rc = verify_run(&t->in, err, sizeof err);
    check(rc != 0 && strstr(err, want) != NULL, "%s is caught: %s", what, err);
}

int main(void)
{
    char err[1024];
    struct { sched_kind kind; int stages, micro, virt; } kinds[] = {
        {SCHED_GPIPE, 4, 8, 1}, {SCHED_1F1B, 4, 8, 1}, {SCHED_INTERLEAVED, 2, 4, 2},
        {SCHED_ZBH1, 4, 8, 1}, {SCHED_2BW, 3, 4, 1},
    };
    for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
        for (int tp = 2; tp <= 4; tp += 2) {
            schedule s;
            int ok = schedule_build(&s, kinds[k].kind, kinds[k].stages, kinds[k].micro, kinds[k].virt, err,
                                    sizeof err) == 0;
            if (ok && kinds[k].kind == SCHED_2BW) ok = schedule_tie_2bw(&s, err, sizeof err) == 0;
            int recvs = 0, gathers = 0;
            for (int st = 0; ok && st < s.stages; st++) recvs += count_recvs(s.ins[st], s.n[st]);
            ok = ok && schedule_scatter_gather(&s, tp, err, sizeof err) == 0;
            for (int st = 0; ok && st < s.stages; st++) {
                gathers += count_op(s.ins[st], s.n[st], SI_GATHER);
                /* each GATHER right after the receive of its message, in its stage's group */
                for (int i = 0; i < s.n[st]; i++) {
                    const sched_instr *g = &s.ins[st][i];
                    if (g->op != SI_GATHER) continue;
                    const sched_instr *r = &s.ins[st][i - 1];
                    int m = r->op == SI_SENDRECV ? r->recv.m : r->m, c = r->op == SI_SENDRECV ? r->recv.chunk : r->chunk;
                    ok &= i > 0 && g->group == st && g->m == m && g->chunk == c;
                }
            }
            check(ok && gathers == recvs && recvs > 0, "%s tp %d: a GATHER after each of the %d receives",
                  sched_name(kinds[k].kind), tp, recvs);
            int rc = ok ? schedule_verify(&s, err, sizeof err) : -1;
            check(rc == 0, "%s tp %d: verifies on %d x %d ranks%s%s", sched_name(kinds[k].kind), tp, kinds[k].stages,
                  tp, rc ? ": " : "", rc ? err : "");
            if (ok) schedule_free(&s);
        }

    /* without the split, a GATHER is refused */
    {
        schedule s;
        if (build(&s, 2) == 0) {
            s.split = 1;
            int rc = schedule_verify(&s, err, sizeof err);
            check(rc != 0 && strstr(err, "not split"), "GATHER in a whole-message schedule: %s", err);
            schedule_free(&s);
        }
    }

    /* planted faults, each in tp rank 1 of stage 1 (rank id 1 * 2 + 1 = 3) */
    for (int fault = 0; fault < 5; fault++) {
        schedule s;
        verify_tp t;
        if (build(&s, 2) != 0 || verify_tp_build(&s, &t) != 0) {
            check(0, "fault %d: build", fault);
            continue;
        }
        char e0[512] = "";
        check(verify_run(&t.in, e0, sizeof e0) == 0, "fault %d: the unplanted copy verifies %s", fault, e0);
        sched_instr *l = t.lists[3];
        int n = t.ranks[3].n;
        int g0 = nth(l, n, SI_GATHER, 0), g1 = nth(l, n, SI_GATHER, 1);
        if (fault == 0) {  /* two GATHERs in the other order */
            sched_instr a = l[g0];
            l[g0] = l[g1];
            l[g1] = a;
            expect_fault(&t, "gathers in another order on one tp rank", "collective order differs in group 1");
        } else if (fault == 1) {  /* one GATHER left out */
            memmove(&l[g0], &l[g0 + 1], sizeof *l * (size_t)(n - g0 - 1));
            t.ranks[3].n = n - 1;
            expect_fault(&t, "a GATHER left out on one tp rank", "rank 3");
        } else if (fault == 2) {  /* GATHER before its receive */
            sched_instr a = l[g0];
            l[g0] = l[g0 - 1];
            l[g0 - 1] = a;
            expect_fault(&t, "a GATHER before its receive", "has not received");
        } else if (fault == 3) {  /* the FWD reads the message before it is whole */
            sched_instr a = l[g0];
            l[g0] = l[g0 + 1];
            l[g0 + 1] = a;
            expect_fault(&t, "a FWD before the GATHER of its input", "before its input activation arrived");
        } else {  /* tp rank 1 of stage 1 takes its slice from tp rank 0 of stage 0 */
            int r0 = nth(l, n, SI_RECV_ACT, 0);
            l[r0].peer = 0;
            expect_fault(&t, "a slice received from another tp rank's peer", "rank 3");
        }
        verify_tp_free(&t);
        schedule_free(&s);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
