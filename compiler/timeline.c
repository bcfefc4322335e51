/* timeline.c: unit-cost simulation of a verified schedule, its text timeline
 * and bubble fraction (conventions in schedule.h). */
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "verify.h"

#define CELL 16

static long cost_of(sched_op op)
{
    return op == SI_FWD || op == SI_BWD_INPUT || op == SI_BWD_WEIGHT ? 1 : op == SI_BWD ? 2 : 0;
}

static long msg_key(const schedule *s, sched_msg_kind kind, int m, int chunk)
{
    return ((long)kind * s->micro + m) * s->chunks + chunk;
}

/* Fills start[st][i] (start time of each instruction) if start is given and
 * returns the makespan, or -1 if the schedule cannot run. Sends are issued at
 * the sender's clock and do not wait; a receive waits for its send. The
 * schedules built here have no collectives; one would cost nothing. */
static long simulate(const schedule *s, long **start)
{
    long nmsg = 4L * s->micro * s->chunks, makespan = 0; /* ACT, GRAD and 2BW's two tied kinds */
    long *sent = malloc(sizeof(long) * (size_t)nmsg);
    long *clock = calloc((size_t)s->stages, sizeof(long));
    int *pc = calloc((size_t)s->stages, sizeof(int));
    if (!sent || !clock || !pc) {
        makespan = -1;
        goto out;
    }
    for (long k = 0; k < nmsg; k++) sent[k] = -1;
    for (int moved = 1, left = 1; left;) {
        if (!moved) {
            makespan = -1;
            goto out;
        }
        moved = left = 0;
        for (int st = 0; st < s->stages; st++) {
            while (pc[st] < s->n[st]) {
                const sched_instr *in = &s->ins[st][pc[st]];
                long t = clock[st];
                if (in->op == SI_SEND_ACT || in->op == SI_SEND_GRAD) {
                    sent[msg_key(s, in->op == SI_SEND_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk)] = t;
                } else if (in->op == SI_RECV_ACT || in->op == SI_RECV_GRAD) {
                    long at = sent[msg_key(s, in->op == SI_RECV_ACT ? MSG_ACT : MSG_GRAD, in->m,
                                           in->chunk)];
                    if (at < 0) break;
                    if (at > t) t = at;
                } else if (in->op == SI_SEND_TIED) {
                    sent[msg_key(s, in->send.kind, in->send.m, in->send.chunk)] = t;
                } else if (in->op == SI_RECV_TIED) {
                    long at = sent[msg_key(s, in->recv.kind, in->recv.m, in->recv.chunk)];
                    if (at < 0) break;
                    if (at > t) t = at;
                } else if (in->op == SI_SENDRECV) {
                    sent[msg_key(s, in->send.kind, in->send.m, in->send.chunk)] = t;
                    long at = sent[msg_key(s, in->recv.kind, in->recv.m, in->recv.chunk)];
                    if (at < 0) break;
                    if (at > t) t = at;
                }
                if (start) start[st][pc[st]] = t;
                clock[st] = t + cost_of(in->op);
                pc[st]++;
                moved = 1;
            }
            if (pc[st] < s->n[st]) left = 1;
            if (clock[st] > makespan) makespan = clock[st];
        }
    }
out:
    free(sent);
    free(clock);
    free(pc);
    return makespan;
}

static long verified_makespan(const schedule *s, long **start)
{
    char err[512];
    if (schedule_verify(s, err, sizeof err) != 0) return -1;
    return simulate(s, start);
}

/* PipeDream-2BW's timelines are of the unrolled prologue + steady + steady +
 * epilogue: schedule_makespan measures that. */
#define UNROLLED(s, type, fail, call)                      \
    do {                                                   \
        if ((s)->pro) {                                    \
            schedule u_;                                   \
            if (schedule_unroll_2bw((s), &u_) != 0) return fail; \
            type r_ = call(&u_);                           \
            schedule_free(&u_);                            \
            return r_;                                     \
        }                                                  \
    } while (0)

long schedule_makespan(const schedule *s)
{
    UNROLLED(s, long, -1, schedule_makespan);
    return verified_makespan(s, NULL);
}

/* 2BW's steady state: per stage, the period of its second steady step (the
 * first still fills the pipeline) against the work in it. */
static double steady_bubble(const schedule *s)
{
    schedule u;
    double idle = 0, total = 0;
    if (schedule_unroll_2bw(s, &u) != 0) return -1.0;
    long **start = calloc((size_t)u.stages, sizeof *start);
    int ok = start != NULL;
    for (int st = 0; ok && st < u.stages; st++)
        ok = (start[st] = malloc(sizeof(long) * ((size_t)u.n[st] + 1))) != NULL;
    if (ok) ok = verified_makespan(&u, start) >= 0;
    for (int st = 0; ok && st < u.stages; st++) {
        long busy = 0, first = s->npro[st] + s->n[st], period = start[st][first + s->n[st]] - start[st][first];
        for (int i = 0; i < s->n[st]; i++) busy += cost_of(s->ins[st][i].op);
        idle += (double)(period - busy);
        total += (double)period;
    }
    if (start)
        for (int st = 0; st < u.stages; st++) free(start[st]);
    free(start);
    schedule_free(&u);
    return !ok ? -1.0 : total > 0 ? idle / total : 0.0;
}

double schedule_bubble(const schedule *s)
{
    if (s->pro) return steady_bubble(s);
    long makespan = verified_makespan(s, NULL), busy = 0;
    if (makespan < 0) return -1.0;
    if (makespan == 0) return 0.0;
    for (int st = 0; st < s->stages; st++)
        for (int i = 0; i < s->n[st]; i++) busy += cost_of(s->ins[st][i].op);
    return (double)(s->stages * makespan - busy) / ((double)s->stages * makespan);
}

/* "F3", "B3", "W3"; with virt > 1 plus the local chunk letter: "F3a", "F3b". */
static void label(const schedule *s, const sched_instr *in, char *buf)
{
    char op = in->op == SI_FWD ? 'F' : in->op == SI_BWD_WEIGHT ? 'W' : 'B';
    if (s->virt > 1) {
        int j = in->chunk / s->stages;
        char letter = j < 26 ? (char)('a' + j) : j < 52 ? (char)('A' + j - 26) : '*';
        snprintf(buf, CELL, "%c%d%c", op, in->m, letter);
    } else {
        snprintf(buf, CELL, "%c%d", op, in->m);
    }
}

static void timeline_2bw(const schedule *s, FILE *out)
{
    schedule u;
    if (schedule_unroll_2bw(s, &u) != 0) {
        fprintf(out, "%s: timeline unavailable\n", sched_name(s->kind));
        return;
    }
    fprintf(out, "%s without flush: prologue, two steady steps (batches 0 and 1), epilogue "
            "(batch 2); microbatch k of batch b is %d b + k; steady-state bubble %.4f\n",
            sched_name(s->kind), s->micro, steady_bubble(s));
    schedule_timeline(&u, out);
    schedule_free(&u);
}

void schedule_timeline(const schedule *s, FILE *out)
{
    char err[512];
    if (s->pro) {
        timeline_2bw(s, out);
        return;
    }
    if (schedule_verify(s, err, sizeof err) != 0) {
        fprintf(out, "%s: schedule does not verify: %s\n", sched_name(s->kind), err);
        return;
    }
    long **start = calloc((size_t)s->stages, sizeof *start);
    char *cells = NULL;
    long makespan = -1;
    int ok = start != NULL;
    for (int st = 0; ok && st < s->stages; st++)
        ok = (start[st] = malloc(sizeof(long) * ((size_t)s->n[st] + 1))) != NULL;
    if (ok) makespan = simulate(s, start);
    if (makespan >= 0) cells = calloc((size_t)s->stages * (size_t)(makespan + 1), CELL);
    if (!cells) {
        fprintf(out, "%s: timeline unavailable\n", sched_name(s->kind));
    } else {
        int width = 1;
        long busy = 0;
        for (int st = 0; st < s->stages; st++)
            for (int i = 0; i < s->n[st]; i++) {
                const sched_instr *in = &s->ins[st][i];
                long c = cost_of(in->op);
                busy += c;
                for (long t = start[st][i]; t < start[st][i] + c; t++) {
                    char *cell = cells + ((size_t)st * (makespan + 1) + t) * CELL;
                    label(s, in, cell);
                    if ((int)strlen(cell) > width) width = (int)strlen(cell);
                }
            }
        fprintf(out, "%s: stages %d, micro %d, virt %d; costs F=1 %s; makespan %ld, bubble %.4f\n",
                sched_name(s->kind), s->stages, s->micro, s->virt,
                s->split_backward ? "B=1 W=1" : "B=2", makespan,
                makespan ? (double)(s->stages * makespan - busy) / ((double)s->stages * makespan)
                         : 0.0);
        for (int st = 0; st < s->stages; st++) {
            fprintf(out, "stage %d |", st);
            for (long t = 0; t < makespan; t++) {
                const char *cell = cells + ((size_t)st * (makespan + 1) + t) * CELL;
                fprintf(out, " %-*s", t + 1 < makespan ? width : 0, cell[0] ? cell : ".");
            }
            fprintf(out, "\n");
        }
    }
    free(cells);
    if (start)
        for (int st = 0; st < s->stages; st++) free(start[st]);
    free(start);
}
