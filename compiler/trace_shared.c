/* trace_shared.c: timed traces of a schedule whose ranks share the cores
 * (conventions in trace_shared.h).  trace.c runs each stage as far as it can
 * on its own clock, which is right only while a stage's speed does not
 * depend on the others; here the stages move together in time order: from
 * one moment to the next (an op ends, a message arrives) the set of
 * computing and waiting stages, and so every computing stage's speed, stays
 * the same.  The rules for messages and the op costs are trace.c's. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "trace_shared.h"
#include "verify.h"

typedef struct {
    int pc;          /* next instruction */
    int posted;      /* a SENDRECV's send half went out */
    int busy;        /* computing: the op at pc */
    double left;     /* its work left, microseconds at full speed */
    double start;    /* its start */
    double wake;     /* waiting for a message that arrives then; INFINITY: not sent yet */
} stage_state;

typedef struct {
    const schedule *s;
    trace *t;
    const trace_costs *costs;
    double *arrive;    /* per message: when its receive can complete; < 0 not sent yet */
    double *comm_free; /* per stage: when its communication stream is free */
    long posted;       /* messages and collectives posted so far */
} shared_sim;

static long msg_index(const schedule *s, sched_msg_kind kind, int m, int chunk)
{
    return ((long)kind * s->micro + m) * s->chunks + chunk;
}

static int comm_event(shared_sim *x, int st, double at, const char *name, int m, int chunk, double *start)
{
    double c = x->costs->comm_us;
    *start = at > x->comm_free[st] ? at : x->comm_free[st];
    x->comm_free[st] = *start + c;
    x->posted++;
    return trace_add(x->t, st, 1, name, "comm", m, chunk, *start, *start + c);
}

static int post_send(shared_sim *x, int st, double at, sched_msg_kind kind, int m, int chunk)
{
    char name[48];
    double start;
    snprintf(name, sizeof name, "send %s m%d", kind == MSG_ACT ? "act" : "grad", m);
    if (comm_event(x, st, at, name, m, chunk, &start) != 0) return -1;
    x->arrive[msg_index(x->s, kind, m, chunk)] = start + x->costs->comm_us;
    return 0;
}

/* The compute cost of instruction in (trace.c's), or -1 for an op that is
 * not compute. */
static double compute_cost(const shared_sim *x, int st, const sched_instr *in)
{
    const trace_costs *c = x->costs;
    switch (in->op) {
    case SI_FWD: return c->f_us[in->chunk];
    case SI_BWD: return c->b_us[in->chunk];
    case SI_BWD_INPUT: return c->b_us[in->chunk] > c->w_us[in->chunk] ? c->b_us[in->chunk] - c->w_us[in->chunk] : 0;
    case SI_BWD_WEIGHT: return c->w_us[in->chunk];
    case SI_OPTIM: return c->optim_us ? c->optim_us[st] : 0;
    default: return -1;
    }
}

static int record(shared_sim *x, int st, const sched_instr *in, double start, double end)
{
    char name[32];
    if (in->op == SI_OPTIM) return trace_add(x->t, st, 0, "optim", "optimizer", -1, -1, start, end);
    char letter = in->op == SI_FWD ? 'F' : in->op == SI_BWD_WEIGHT ? 'W' : 'B';
    const char *cat = in->op == SI_FWD ? "forward" : in->op == SI_BWD_WEIGHT ? "weight" : "backward";
    snprintf(name, sizeof name, "%c%d", letter, in->m);
    return trace_add(x->t, st, 0, name, cat, in->m, in->chunk, start, end);
}

/* Runs stage st's instructions at `now` until one computes for a while
 * (busy), waits for a message, or the list ends.  0, or -1 out of memory. */
static int advance(shared_sim *x, int st, stage_state *g, double now)
{
    const schedule *s = x->s;
    g->wake = INFINITY;
    while (g->pc < s->n[st]) {
        const sched_instr *in = &s->ins[st][g->pc];
        if (in->op == SI_SEND_ACT || in->op == SI_SEND_GRAD) {
            if (post_send(x, st, now, in->op == SI_SEND_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk) != 0) return -1;
        } else if (in->op == SI_COLLECTIVE) {
            char name[SCHED_TAG_MAX + 1];
            double start;
            snprintf(name, sizeof name, "%s", in->tag);
            for (char *d = name; *d; d++)
                if (*d == '.') { *d = ' '; break; }
            if (comm_event(x, st, now, name, -1, -1, &start) != 0) return -1;
        } else if (in->op == SI_RECV_ACT || in->op == SI_RECV_GRAD || in->op == SI_SENDRECV) {
            if (in->op == SI_SENDRECV && !g->posted) {
                if (post_send(x, st, now, in->send.kind, in->send.m, in->send.chunk) != 0) return -1;
                g->posted = 1;
            }
            long k = in->op == SI_SENDRECV ? msg_index(s, in->recv.kind, in->recv.m, in->recv.chunk)
                                           : msg_index(s, in->op == SI_RECV_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk);
            if (x->arrive[k] < 0 || x->arrive[k] > now) {
                g->wake = x->arrive[k] < 0 ? INFINITY : x->arrive[k];
                return 0;
            }
        } else {
            double cost = compute_cost(x, st, in);
            if (cost > 0) {
                g->busy = 1, g->left = cost, g->start = now;
                return 0;
            }
            if (cost == 0 && record(x, st, in, now, now) != 0) return -1;
        }
        g->pc++;
        g->posted = 0;
    }
    return 0;
}

/* E[max over cores of the computing ranks on it], for every count k of
 * computing ranks into e[0..ranks]: `ranks` sit on `cores`, ranks / cores
 * each and one more on the first ranks % cores, k of them chosen uniformly
 * (a multivariate hypergeometric).  E[max] is the sum over M of
 * P(max > M); P(max <= M) counts the choices with at most M on every core
 * (the coefficient of x^k in the product over cores of sum_{j <= M}
 * C(size, j) x^j) over C(ranks, k), one product for every k.  Doubles hold
 * the counts up to 256 ranks; past that (or with a core per rank) 1 for
 * every k.  0, or -1 out of memory. */
static int placed_slowdowns(int ranks, int cores, double *e)
{
    for (int k = 0; k <= ranks; k++) e[k] = 1;
    if (ranks <= cores || cores < 1 || ranks > 256) return 0;
    double *ways = malloc(sizeof(double) * (size_t)(3 * (ranks + 1)));
    if (!ways) return -1;
    double *next = ways + ranks + 1, *all = next + ranks + 1;
    all[0] = 1;
    for (int k = 1; k <= ranks; k++) all[k] = all[k - 1] * (ranks - k + 1) / k;  /* C(ranks, k) */
    for (int k = 1; k <= ranks; k++) e[k] = 0;
    for (int M = 0; M < (ranks + cores - 1) / cores; M++) {
        for (int j = 0; j <= ranks; j++) ways[j] = j == 0;
        for (int c = 0; c < cores; c++) {
            int size = ranks / cores + (c < ranks % cores);
            for (int j = 0; j <= ranks; j++) next[j] = 0;
            double binom = 1;  /* C(size, i) */
            for (int i = 0; i <= size && i <= M; binom = binom * (size - i) / (i + 1), i++)
                for (int j = 0; j + i <= ranks; j++) next[j + i] += ways[j] * binom;
            for (int j = 0; j <= ranks; j++) ways[j] = next[j];
        }
        for (int k = 1; k <= ranks; k++) e[k] += 1 - ways[k] / all[k];
    }
    free(ways);
    return 0;
}

double trace_placed_slowdown(int computing, int ranks, int cores)
{
    if (computing <= 0 || ranks <= cores || cores < 1 || ranks > 256) return 1;
    double *e = malloc(sizeof(double) * (size_t)(ranks + 1));
    double x = e && placed_slowdowns(ranks, cores, e) == 0 ? e[computing < ranks ? computing : ranks] : 1;
    free(e);
    return x;
}

double trace_bound_slowdown(int computing, int ranks, int cores)
{
    if (computing <= 0 || ranks <= cores || cores < 1) return 1;
    return (computing + cores - 1) / cores;
}

/* bound: each stage's first rank in the node's stage order, into first[]
 * (pp + 1 entries, first[pp] the node's ranks), when every stage holds a
 * whole number of ranks (at least 1); else 0 (not priced bound). */
static int bound_layout(const trace_share *share, int stages, int *first)
{
    first[0] = 0;
    for (int st = 0; st < stages; st++) {
        double r = share->ranks ? share->ranks[st] : 1;
        if (r < 1 || fabs(r - lround(r)) > 1e-9) return 0;
        first[st + 1] = first[st] + (int)lround(r);
    }
    return 1;
}

int trace_from_costs_shared(trace *t, const schedule *s, const trace_costs *costs, const trace_share *share)
{
    char err[512];
    if (s->pro) { /* PipeDream-2BW: prologue + steady + steady + epilogue, as trace.c */
        schedule u;
        if (schedule_unroll_2bw(s, &u) != 0) return -1;
        int rc = trace_from_costs_shared(t, &u, costs, share);
        schedule_free(&u);
        return rc;
    }
    if (!(share->cores > 0) || schedule_verify(s, err, sizeof err) != 0) return -1;
    long nmsg = 2L * s->micro * s->chunks;
    shared_sim x = { s, t, costs, malloc(sizeof(double) * (size_t)(nmsg ? nmsg : 1)),
                     calloc((size_t)s->stages, sizeof(double)), 0 };
    stage_state *g = calloc((size_t)s->stages, sizeof *g);
    int rc = x.arrive && x.comm_free && g ? 0 : -1;
    for (long k = 0; rc == 0 && k < nmsg; k++) x.arrive[k] = -1;
    if (rc == 0 && s->stages > t->ranks) t->ranks = s->stages;
    double w = share->wait_share < 0 ? 0 : share->wait_share > 1 ? 1 : share->wait_share;
    /* placed: the slowdown for each count of computing ranks, once */
    double node = 0;
    for (int st = 0; st < s->stages; st++) node += share->ranks ? share->ranks[st] : 1;
    int R = (int)lround(node), C = (int)share->cores;
    /* bound: the stages' rank ranges and each core's demand */
    int *first = share->bound && rc == 0 ? malloc(sizeof(int) * (size_t)(s->stages + 1)) : NULL;
    double *core = NULL, *speed = malloc(sizeof(double) * (size_t)s->stages);
    if (!speed || (share->bound && !first)) rc = -1;
    int bound = first && C >= 1 && bound_layout(share, s->stages, first);
    if (bound && !(core = malloc(sizeof(double) * (size_t)C))) rc = -1;
    double *slow = share->placed && !bound && rc == 0 ? malloc(sizeof(double) * (size_t)(R + 1)) : NULL;
    if (share->placed && !bound && rc == 0 && (!slow || placed_slowdowns(R, (int)share->cores, slow) != 0)) rc = -1;
    for (int k = 0; rc == 0 && slow && k <= R; k++)
        if (slow[k] > node / share->cores) slow[k] = node / share->cores;  /* no slower than every rank computing */
    for (double now = 0; rc == 0;) {
        /* every idle stage as far as it goes now; until none moves and
         * nothing more is sent (a message posted now may let a stage looked
         * at before receive now) */
        for (int moved = 1; moved && rc == 0;) {
            moved = 0;
            for (int st = 0; st < s->stages && rc == 0; st++) {
                if (g[st].busy || g[st].pc >= s->n[st]) continue;
                int pc = g[st].pc;
                long posted = x.posted;
                rc = advance(&x, st, &g[st], now);
                if (g[st].pc != pc || g[st].busy || x.posted != posted) moved = 1;
            }
        }
        if (rc != 0) break;
        /* the demand on the cores: computing ranks, and waiting ranks at
         * their share (those whose list has ended wait for the next step) */
        double demand = 0, computing = 0;
        int left = 0;
        for (int st = 0; st < s->stages; st++) {
            double r = share->ranks ? share->ranks[st] : 1;
            demand += g[st].busy ? r : w * r;
            computing += g[st].busy ? r : 0;
            left += g[st].pc < s->n[st];
        }
        if (!left) break;
        double all = demand > share->cores ? share->cores / demand : 1;
        if (slow) {
            int k = (int)lround(computing);
            if (k > R) k = R;
            if (slow[k] > 1 && 1 / slow[k] < all) all = 1 / slow[k];
        }
        for (int st = 0; st < s->stages; st++) speed[st] = all;
        if (bound) {  /* each stage at the pace of its busiest core */
            for (int k = 0; k < C; k++) core[k] = 0;
            for (int st = 0; st < s->stages; st++)
                for (int i = first[st]; i < first[st + 1]; i++) core[i % C] += g[st].busy ? 1 : w;
            for (int st = 0; st < s->stages; st++) {
                double most = 1;
                for (int i = first[st]; i < first[st + 1] && i < first[st] + C; i++)
                    most = fmax(most, core[i % C]);
                speed[st] = 1 / most;
            }
        }
        /* the next moment: an op ends or a message arrives */
        double next = INFINITY;
        for (int st = 0; st < s->stages; st++) {
            if (g[st].busy && now + g[st].left / speed[st] < next) next = now + g[st].left / speed[st];
            if (!g[st].busy && g[st].wake < next) next = g[st].wake;
        }
        if (!isfinite(next)) { rc = -1; break; } /* cannot happen for a verified schedule */
        for (int st = 0; st < s->stages && rc == 0; st++) {
            if (!g[st].busy) continue;
            /* ends now (to rounding: the op that set `next` ends exactly) */
            if (now + g[st].left / speed[st] <= next * (1 + 1e-12)) {
                rc = record(&x, st, &s->ins[st][g[st].pc], g[st].start, next);
                g[st].busy = 0, g[st].left = 0;
                g[st].pc++;
                g[st].posted = 0;
            } else {
                g[st].left -= (next - now) * speed[st];
            }
        }
        now = next;
    }
    free(slow);
    free(first);
    free(core);
    free(speed);
    free(x.arrive);
    free(x.comm_free);
    free(g);
    return rc;
}
