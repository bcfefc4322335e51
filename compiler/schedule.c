/* schedule.c: pipeline schedule generation.
 *
 * Each kind first decides, per stage, the order of its compute ops (F, B, or the
 * split I + W). One lowering pass then turns that order into instructions: the
 * receive an op needs goes right before it, the send it produces right after it,
 * and a send followed by a receive becomes one SENDRECV. With rendezvous sends
 * the fusion is what keeps neighbours from both sending first (1F1B's steady
 * state: "send activation of m, receive gradient of m'"). The same pass numbers
 * the activation slots and counts the peak per stage.
 */
#include "schedule.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* A compute op in a stage's order: 'F' forward, 'B' full backward,
 * 'I' input gradient, 'W' weight gradient. */
typedef struct {
    char op;
    int m, chunk;
} cop;

static const char *const kind_names[SCHED__COUNT] = {
    "gpipe", "1f1b", "interleaved", "zb-h1", "pipedream-2bw"};

const char *sched_name(sched_kind kind)
{
    return (unsigned)kind < SCHED__COUNT ? kind_names[kind] : "?";
}

int sched_parse(const char *name, sched_kind *out)
{
    for (int k = 0; k < SCHED__COUNT; k++)
        if (strcmp(name, kind_names[k]) == 0) {
            *out = (sched_kind)k;
            return 0;
        }
    if (strcmp(name, "2bw") == 0) {
        *out = SCHED_2BW;
        return 0;
    }
    return -1;
}

const char *sched_op_name(sched_op op)
{
    static const char *const names[SI__COUNT] = {
        "FWD", "BWD", "BWD_INPUT", "BWD_WEIGHT", "SEND_ACT", "RECV_ACT", "SEND_GRAD",
        "RECV_GRAD", "SENDRECV", "COLLECTIVE", "OPTIM", "SEND_TIED", "RECV_TIED", "GATHER"};
    return (unsigned)op < SI__COUNT ? names[op] : "?";
}

int sched_chunk_stage(const schedule *s, int chunk)
{
    return chunk % s->stages;
}

void sched_instr_str(const sched_instr *in, char *buf, size_t len)
{
    const char *name = sched_op_name(in->op);
    switch (in->op) {
    case SI_FWD: case SI_BWD: case SI_BWD_INPUT: case SI_BWD_WEIGHT:
        snprintf(buf, len, "%s m%d c%d slot %d", name, in->m, in->chunk, in->slot);
        break;
    case SI_SEND_ACT: case SI_SEND_GRAD:
        snprintf(buf, len, "%s m%d c%d to rank %d", name, in->m, in->chunk, in->peer);
        break;
    case SI_RECV_ACT: case SI_RECV_GRAD:
        snprintf(buf, len, "%s m%d c%d from rank %d", name, in->m, in->chunk, in->peer);
        break;
    case SI_SENDRECV:
        snprintf(buf, len, "SENDRECV(send %s m%d c%d to rank %d, recv %s m%d c%d from rank %d)",
                 in->send.kind == MSG_ACT ? "ACT" : "GRAD", in->send.m, in->send.chunk,
                 in->send.peer, in->recv.kind == MSG_ACT ? "ACT" : "GRAD", in->recv.m,
                 in->recv.chunk, in->recv.peer);
        break;
    case SI_COLLECTIVE:
        snprintf(buf, len, "COLLECTIVE group %d \"%s\"", in->group, in->tag);
        break;
    case SI_GATHER:
        snprintf(buf, len, "GATHER %s m%d c%d over tp group %d", in->recv.kind == MSG_ACT ? "ACT" : "GRAD",
                 in->m, in->chunk, in->group);
        break;
    case SI_SEND_TIED: case SI_RECV_TIED: {
        const sched_msg *g = in->op == SI_SEND_TIED ? &in->send : &in->recv;
        snprintf(buf, len, "%s %s of batch m%d %s rank %d", name,
                 g->kind == MSG_TIED_GRAD ? "wte gradient" : "wte weights", g->m,
                 in->op == SI_SEND_TIED ? "to" : "from", g->peer);
        break;
    }
    default:
        snprintf(buf, len, "%s", name);
        break;
    }
}

static void dump_list(const char *what, const sched_instr *ins, int n, FILE *out)
{
    char buf[160];
    if (what) fprintf(out, "  %s:\n", what);
    for (int i = 0; i < n; i++) {
        sched_instr_str(&ins[i], buf, sizeof buf);
        fprintf(out, "  #%d %s\n", i, buf);
    }
}

void schedule_dump(const schedule *s, FILE *out)
{
    fprintf(out, "schedule %s: stages %d, micro %d, virt %d%s", sched_name(s->kind),
            s->stages, s->micro, s->virt,
            s->weight_delay ? ", weights one step stale (2BW)" : "");
    if (s->split > 1) fprintf(out, ", messages split across %d tp ranks (scatter/gather)", s->split);
    fputc('\n', out);
    for (int st = 0; st < s->stages; st++) {
        fprintf(out, "stage %d (%d activation slots, %d message buffers):\n", st, s->slots[st],
                s->bufs[st]);
        if (s->pro) dump_list("prologue (fills the pipeline)", s->pro[st], s->npro[st], out);
        dump_list(s->pro ? "steady step (finishes batch 1, starts batch 2)" : NULL, s->ins[st],
                  s->n[st], out);
        if (s->pro) dump_list("epilogue (finishes batch 1, drains)", s->epi[st], s->nepi[st], out);
    }
}

static void fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- compute orders ---------------------------------------------------- */

static void put(cop *ord, int *n, char op, int m, int chunk)
{
    ord[*n].op = op;
    ord[*n].m = m;
    ord[*n].chunk = chunk;
    (*n)++;
}

static int min_int(int a, int b) { return a < b ? a : b; }

static void order_gpipe(int m, int st, cop *ord, int *n)
{
    for (int i = 0; i < m; i++) put(ord, n, 'F', i, st);
    for (int i = 0; i < m; i++) put(ord, n, 'B', i, st);
}

/* Warm-up of p - st - 1 forwards, then one forward one backward, then the
 * remaining backwards. Also the per-step order of PipeDream-2BW. */
static void order_1f1b(int p, int m, int st, cop *ord, int *n)
{
    int warm = min_int(p - st - 1, m);
    for (int i = 0; i < warm; i++) put(ord, n, 'F', i, st);
    for (int i = 0; i < m - warm; i++) {
        put(ord, n, 'F', warm + i, st);
        put(ord, n, 'B', i, st);
    }
    for (int i = m - warm; i < m; i++) put(ord, n, 'B', i, st);
}

/* Megatron interleaved 1F1B (Narayanan et al. 2021). The k-th forward of a
 * stage walks microbatches in groups of p, moving to the next local chunk after
 * each group; backwards walk the same way over the local chunks in reverse.
 * Warm-up is 2 (p - st - 1) + (v - 1) p forwards, which is why micro must be a
 * multiple of p. */
static void order_interleaved(int p, int m, int v, int st, cop *ord, int *n)
{
    int total = m * v;
    int warm = min_int(total, 2 * (p - st - 1) + (v - 1) * p);
#define MB(k) (((k) / (p * v)) * p + (k) % p)
#define FCHUNK(k) ((((k) / p) % v) * p + st)
#define BCHUNK(k) ((v - 1 - ((k) / p) % v) * p + st)
    for (int k = 0; k < warm; k++) put(ord, n, 'F', MB(k), FCHUNK(k));
    for (int i = 0; i < total - warm; i++) {
        put(ord, n, 'F', MB(warm + i), FCHUNK(warm + i));
        put(ord, n, 'B', MB(i), BCHUNK(i));
    }
    for (int k = total - warm; k < total; k++) put(ord, n, 'B', MB(k), BCHUNK(k));
#undef MB
#undef FCHUNK
#undef BCHUNK
}

/* Zero-bubble H1 (Qi et al. 2023), by list scheduling with unit costs
 * (F = B = W = 1). Each stage, when free, runs the first of: the next B whose
 * gradient has arrived; the next F whose activation has arrived, if fewer than
 * limit[st] microbatches are in flight; a pending W. So W is deferred into time
 * the stage would otherwise idle, and a microbatch stays in flight (its slot
 * live) from F to W. limit[st] = min(m, p - st) keeps every stage at its 1F1B
 * activation count. (The paper lets every stage hold p, the first stage's count;
 * with per-stage 1F1B limits the last stage must run F B W back to back, which
 * bounds the makespan at 3m + 2(p - 1) instead of 3m + p - 1.) */
static int order_zbh1(int p, int m, cop **ord, int *n)
{
    struct zb {
        int nf, nb, nw;   /* next F, next B (= I), next W, in microbatch order */
        int live;         /* microbatches between F and W */
        long free_at;     /* when the running op ends */
    } *z = calloc((size_t)p, sizeof *z);
    long *act = malloc(sizeof(long) * (size_t)p * m);  /* F(st, mb) input arrives; -1 unknown */
    long *grad = malloc(sizeof(long) * (size_t)p * m); /* I(st, mb) gradient arrives */
    int rc = -1;
    if (!z || !act || !grad) goto out;
    for (int i = 0; i < p * m; i++) {
        act[i] = i < m ? 0 : -1; /* stage 0 reads data */
        grad[i] = -1;
    }
    long left = 3L * p * m, guard = 8L * (3L * m + 2L * p) + 64;
    for (long t = 0; left > 0 && t < guard; t++) {
        for (int st = 0; st < p; st++) {
            struct zb *q = &z[st];
            long *a = &act[st * m], *g = &grad[st * m];
            if (q->free_at > t) continue;
            if (q->nb < q->nf && g[q->nb] >= 0 && g[q->nb] <= t) {
                if (st > 0) grad[(st - 1) * m + q->nb] = t + 1;
                put(ord[st], &n[st], 'I', q->nb++, st);
            } else if (q->nf < m && q->live < min_int(m, p - st) && a[q->nf] >= 0 && a[q->nf] <= t) {
                if (st < p - 1) act[(st + 1) * m + q->nf] = t + 1;
                else g[q->nf] = t + 1; /* the loss: backward starts from its own forward */
                q->live++;
                put(ord[st], &n[st], 'F', q->nf++, st);
            } else if (q->nw < q->nb) {
                q->live--;
                put(ord[st], &n[st], 'W', q->nw++, st);
            } else {
                continue;
            }
            q->free_at = t + 1;
            left--;
        }
    }
    rc = left == 0 ? 0 : -1;
out:
    free(z);
    free(act);
    free(grad);
    return rc;
}

/* ---- lowering ---------------------------------------------------------- */

/* Where the messages go. Every compute op gets its unit-cost time from a
 * dependency simulation of the orders (F, I, W = 1, B = 2; messages free).
 * Each message gets a key K: the consumer's start time, or, if the sender is in
 * the middle of an op then, that op's start (the latest moment up to the
 * consumer's start at which the sender is between ops; never before the
 * producer ends). Both ends put it at the boundary before their first op that
 * starts at or after K. Between ops k-1 and k a stage then only holds keys in
 * (start[k-1], start[k]], and sorting each boundary by (K, message id) makes
 * every stage meet its messages in one global order that all stages agree on.
 * That is what makes rendezvous sends deadlock-free: no two ranks can each be
 * waiting for the other to reach a later message. A send and a receive that end
 * up next to each other become one SENDRECV; in 1F1B's steady state this gives
 * "send activation of m, receive gradient of m'" on one side, paired with "send
 * gradient of m', receive activation of m" on the other. The unit-cost
 * simulation (timeline.c) of the result reproduces these times exactly. */

typedef struct {
    int at;             /* goes before compute op `at` (n: after the last) */
    long key, id;
    int is_send;
    sched_msg msg;
} event;

typedef struct {
    const schedule *s;
    cop **ord;
    int *n;
    long **start, **end;   /* [stage][op index] */
    int *fpos, *bpos;      /* per (m, chunk): index of its F / backward in its stage */
    long *fend, *bend;     /* per (m, chunk): end time of F / of B or I; -1 not yet */
    int *slot_of;          /* per (m, chunk): activation slot */
    event **ev;
    int *nev;
} plan;

static long op_cost(char op) { return op == 'B' ? 2 : 1; }

/* The message op needs before it runs (recv) and the one it produces (send);
 * none when the neighbouring chunk lives on this stage too (stages == 1). */
static void op_messages(const schedule *s, int st, cop op, int *has_recv, sched_msg *recv,
                        int *has_send, sched_msg *send)
{
    int c = op.chunk, last = s->chunks - 1;
    *has_recv = *has_send = 0;
    if (op.op == 'F') {
        if (c > 0 && sched_chunk_stage(s, c - 1) != st) {
            *has_recv = 1;
            *recv = (sched_msg){MSG_ACT, op.m, c, sched_chunk_stage(s, c - 1)};
        }
        if (c < last && sched_chunk_stage(s, c + 1) != st) {
            *has_send = 1;
            *send = (sched_msg){MSG_ACT, op.m, c + 1, sched_chunk_stage(s, c + 1)};
        }
    } else if (op.op == 'B' || op.op == 'I') {
        if (c < last && sched_chunk_stage(s, c + 1) != st) {
            *has_recv = 1;
            *recv = (sched_msg){MSG_GRAD, op.m, c, sched_chunk_stage(s, c + 1)};
        }
        if (c > 0 && sched_chunk_stage(s, c - 1) != st) {
            *has_send = 1;
            *send = (sched_msg){MSG_GRAD, op.m, c - 1, sched_chunk_stage(s, c - 1)};
        }
    }
}

/* Unit-cost times of the compute orders; -1 if they wait on each other. */
static int ideal_times(plan *pl)
{
    const schedule *s = pl->s;
    int p = s->stages, C = s->chunks, left = 1;
    int *pos = calloc((size_t)p, sizeof(int));
    long *clock = calloc((size_t)p, sizeof(long));
    if (!pos || !clock) left = -1;
    for (int moved = 1; left > 0 && moved;) {
        moved = left = 0;
        for (int st = 0; st < p; st++) {
            for (; pos[st] < pl->n[st]; pos[st]++) {
                cop op = pl->ord[st][pos[st]];
                int key = op.m * C + op.chunk;
                long dep;
                if (op.op == 'F') {
                    dep = op.chunk > 0 ? pl->fend[key - 1] : 0;
                } else if (op.op == 'W') {
                    dep = pl->bend[key];
                } else { /* B or I: its own forward and the gradient from chunk + 1 */
                    long own = pl->fend[key], in = op.chunk < C - 1 ? pl->bend[key + 1] : 0;
                    dep = own < 0 || in < 0 ? -1 : own > in ? own : in;
                }
                if (dep < 0) break;
                long t = dep > clock[st] ? dep : clock[st];
                pl->start[st][pos[st]] = t;
                clock[st] = pl->end[st][pos[st]] = t + op_cost(op.op);
                if (op.op == 'F') pl->fend[key] = clock[st];
                else if (op.op != 'W') pl->bend[key] = clock[st];
                moved = 1;
            }
            if (pos[st] < pl->n[st]) left = 1;
        }
    }
    free(pos);
    free(clock);
    return left == 0 ? 0 : -1;
}

static int cmp_event(const void *x, const void *y)
{
    const event *a = x, *b = y;
    if (a->at != b->at) return a->at < b->at ? -1 : 1;
    if (a->key != b->key) return a->key < b->key ? -1 : 1;
    return a->id < b->id ? -1 : a->id > b->id;
}

/* First index in [0, n) whose start is >= t (n if none); starts ascend. */
static int first_at(const long *start, int n, long t)
{
    int lo = 0, hi = n;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (start[mid] >= t) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/* Last index whose start is < t, or -1. */
static int last_before(const long *start, int n, long t)
{
    return first_at(start, n, t) - 1;
}

static int place_messages(plan *pl)
{
    const schedule *s = pl->s;
    for (int st = 0; st < s->stages; st++)
        for (int i = 0; i < pl->n[st]; i++) {
            int has_recv, has_send;
            sched_msg recv, send;
            op_messages(s, st, pl->ord[st][i], &has_recv, &recv, &has_send, &send);
            if (!has_send) continue;
            int q = send.peer, key = send.m * s->chunks + send.chunk;
            int c = send.kind == MSG_ACT ? pl->fpos[key] : pl->bpos[key];
            if (c < 0) return -1;
            long due = pl->start[q][c];
            int busy = last_before(pl->start[st], pl->n[st], due);
            long k = busy >= 0 && pl->end[st][busy] > due ? pl->start[st][busy] : due;
            int at_send = first_at(pl->start[st], pl->n[st], k);
            int at_recv = first_at(pl->start[q], c, k);
            long id = (long)send.kind * s->micro * s->chunks + key;
            pl->ev[st][pl->nev[st]++] = (event){at_send, k, id, 1, send};
            recv = send;
            recv.peer = st;
            pl->ev[q][pl->nev[q]++] = (event){at_recv, k, id, 0, recv};
        }
    for (int st = 0; st < s->stages; st++)
        qsort(pl->ev[st], (size_t)pl->nev[st], sizeof(event), cmp_event);
    return 0;
}

static sched_instr blank(sched_op op)
{
    sched_instr in;
    memset(&in, 0, sizeof in);
    in.op = op;
    in.slot = in.peer = in.group = -1;
    return in;
}

static sched_instr plain(sched_msg msg, int is_send)
{
    sched_op op = msg.kind == MSG_ACT ? (is_send ? SI_SEND_ACT : SI_RECV_ACT)
                                      : (is_send ? SI_SEND_GRAD : SI_RECV_GRAD);
    sched_instr in = blank(op);
    in.m = msg.m;
    in.chunk = msg.chunk;
    in.peer = msg.peer;
    return in;
}

/* Peak number of messages the stage holds outside activation slots: produced
 * and not yet sent, or received and not yet consumed. */
static int message_buffers(const schedule *s, int st, const sched_instr *ins, int n)
{
    int held = 0, peak = 0;
    for (int i = 0; i < n; i++) {
        const sched_instr *in = &ins[i];
        if (in->op == SI_SEND_ACT || in->op == SI_SEND_GRAD) {
            held--;
        } else if (in->op == SI_RECV_ACT || in->op == SI_RECV_GRAD || in->op == SI_SENDRECV) {
            if (++held > peak) peak = held;
            if (in->op == SI_SENDRECV) held--;
        } else if (in->op <= SI_BWD_INPUT) {
            int has_recv, has_send;
            sched_msg recv, send;
            cop op = {in->op == SI_FWD ? 'F' : 'B', in->m, in->chunk};
            op_messages(s, st, op, &has_recv, &recv, &has_send, &send);
            if (has_send && ++held > peak) peak = held;
            if (has_recv) held--;
        }
    }
    return peak;
}

/* Instructions of one stage: messages of each boundary, then the op. Slots:
 * a FWD takes the most recently freed slot, or a new one. */
static int emit_stage(schedule *s, const plan *pl, int st)
{
    int n = pl->n[st], nev = pl->nev[st], k = 0, e = 0, nslots = 0, nfree = 0;
    const cop *ord = pl->ord[st];
    const event *ev = pl->ev[st];
    sched_instr *out = malloc(sizeof *out * (size_t)(n + nev + 1));
    int *freed = malloc(sizeof(int) * ((size_t)n + 1));
    if (!out || !freed) {
        free(out);
        free(freed);
        return -1;
    }
    for (int i = 0; i <= n; i++) {
        for (; e < nev && ev[e].at == i; e++) {
            if (e + 1 < nev && ev[e + 1].at == i && ev[e].is_send != ev[e + 1].is_send) {
                sched_instr sr = blank(SI_SENDRECV);
                sr.send = ev[e].is_send ? ev[e].msg : ev[e + 1].msg;
                sr.recv = ev[e].is_send ? ev[e + 1].msg : ev[e].msg;
                out[k++] = sr;
                e++;
            } else {
                out[k++] = plain(ev[e].msg, ev[e].is_send);
            }
        }
        if (i == n) break;
        int key = ord[i].m * s->chunks + ord[i].chunk;
        sched_instr in = blank(ord[i].op == 'F'   ? SI_FWD
                               : ord[i].op == 'B' ? SI_BWD
                               : ord[i].op == 'I' ? SI_BWD_INPUT
                                                  : SI_BWD_WEIGHT);
        in.m = ord[i].m;
        in.chunk = ord[i].chunk;
        if (ord[i].op == 'F') pl->slot_of[key] = nfree ? freed[--nfree] : nslots++;
        else if (ord[i].op == 'B' || ord[i].op == 'W') freed[nfree++] = pl->slot_of[key];
        in.slot = pl->slot_of[key];
        out[k++] = in;
    }
    out[k++] = blank(SI_OPTIM);
    s->ins[st] = out;
    s->n[st] = k;
    s->slots[st] = nslots;
    s->bufs[st] = message_buffers(s, st, out, k);
    free(freed);
    return 0;
}

/* Orders to instructions; -1 with err set on failure. */
static int lower(schedule *s, cop **ord, int *n, char *err, size_t errlen)
{
    int p = s->stages, rc = -1;
    long keys = (long)s->micro * s->chunks;
    plan pl = {s, ord, n, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    pl.start = calloc((size_t)p, sizeof(long *));
    pl.end = calloc((size_t)p, sizeof(long *));
    pl.ev = calloc((size_t)p, sizeof(event *));
    pl.nev = calloc((size_t)p, sizeof(int));
    pl.fpos = malloc(sizeof(int) * (size_t)keys);
    pl.bpos = malloc(sizeof(int) * (size_t)keys);
    pl.fend = malloc(sizeof(long) * (size_t)keys);
    pl.bend = malloc(sizeof(long) * (size_t)keys);
    pl.slot_of = malloc(sizeof(int) * (size_t)keys);
    if (!pl.start || !pl.end || !pl.ev || !pl.nev || !pl.fpos || !pl.bpos || !pl.fend ||
        !pl.bend || !pl.slot_of)
        goto out;
    for (long k = 0; k < keys; k++) {
        pl.fpos[k] = pl.bpos[k] = -1;
        pl.fend[k] = pl.bend[k] = -1;
    }
    for (int st = 0; st < p; st++) {
        pl.start[st] = malloc(sizeof(long) * ((size_t)n[st] + 1));
        pl.end[st] = malloc(sizeof(long) * ((size_t)n[st] + 1));
        pl.ev[st] = malloc(sizeof(event) * (2 * (size_t)n[st] + 1));
        if (!pl.start[st] || !pl.end[st] || !pl.ev[st]) goto out;
        for (int i = 0; i < n[st]; i++) {
            int key = ord[st][i].m * s->chunks + ord[st][i].chunk;
            if (ord[st][i].op == 'F') pl.fpos[key] = i;
            else if (ord[st][i].op != 'W') pl.bpos[key] = i;
        }
    }
    if (ideal_times(&pl) != 0 || place_messages(&pl) != 0) {
        fail(err, errlen, "%s: the compute orders wait on each other (stages %d, micro %d, virt %d)",
             sched_name(s->kind), s->stages, s->micro, s->virt);
        goto out;
    }
    for (int st = 0; st < p; st++)
        if (emit_stage(s, &pl, st) != 0) goto out;
    rc = 0;
out:
    for (int st = 0; st < p; st++) {
        if (pl.start) free(pl.start[st]);
        if (pl.end) free(pl.end[st]);
        if (pl.ev) free(pl.ev[st]);
    }
    free(pl.start);
    free(pl.end);
    free(pl.ev);
    free(pl.nev);
    free(pl.fpos);
    free(pl.bpos);
    free(pl.fend);
    free(pl.bend);
    free(pl.slot_of);
    return rc;
}

/* ---- scatter/gather ------------------------------------------------------ */

/* The list with a GATHER after each receive of a pipeline message; -1 out of memory. */
static int add_gathers(sched_instr **ins, int *n, int stage)
{
    int extra = 0;
    for (int i = 0; i < *n; i++) {
        sched_op op = (*ins)[i].op;
        extra += op == SI_RECV_ACT || op == SI_RECV_GRAD || op == SI_SENDRECV;
    }
    sched_instr *out = malloc(sizeof *out * ((size_t)(*n + extra) + 1));
    if (!out) return -1;
    int k = 0;
    for (int i = 0; i < *n; i++) {
        const sched_instr *in = &(*ins)[i];
        out[k++] = *in;
        sched_msg got;
        if (in->op == SI_RECV_ACT || in->op == SI_RECV_GRAD)
            got = (sched_msg){in->op == SI_RECV_ACT ? MSG_ACT : MSG_GRAD, in->m, in->chunk, in->peer};
        else if (in->op == SI_SENDRECV)
            got = in->recv;
        else
            continue;
        sched_instr g = blank(SI_GATHER);
        g.m = got.m;
        g.chunk = got.chunk;
        g.recv = got;
        g.group = stage;
        snprintf(g.tag, sizeof g.tag, "gather.%s", got.kind == MSG_ACT ? "act" : "grad");
        out[k++] = g;
    }
    free(*ins);
    *ins = out;
    *n = k;
    return 0;
}

int schedule_scatter_gather(schedule *s, int tp, char *err, size_t errlen)
{
    if (tp < 2) {
        fail(err, errlen, "scatter/gather needs tp >= 2 ranks to split messages across (tp = %d)", tp);
        return -1;
    }
    for (int st = 0; st < s->stages; st++)
        if (add_gathers(&s->ins[st], &s->n[st], st) != 0 ||
            (s->pro && (add_gathers(&s->pro[st], &s->npro[st], st) != 0 ||
                        add_gathers(&s->epi[st], &s->nepi[st], st) != 0))) {
            fail(err, errlen, "scatter/gather: out of memory");
            return -1;
        }
    s->split = tp;
    return 0;
}

/* ---- build ------------------------------------------------------------- */

void schedule_free(schedule *s)
{
    if (s->ins)
        for (int st = 0; st < s->stages; st++) free(s->ins[st]);
    for (int st = 0; st < s->stages; st++) {
        if (s->pro) free(s->pro[st]);
        if (s->epi) free(s->epi[st]);
    }
    free(s->pro);
    free(s->epi);
    free(s->npro);
    free(s->nepi);
    free(s->ins);
    free(s->n);
    free(s->slots);
    free(s->bufs);
    memset(s, 0, sizeof *s);
}

/* Each stage's compute order (F, B, or I and W): *ord[st] has *nord[st] ops.
 * 0, or -1 with err set (the arrays are then freed). */
static int compute_orders(sched_kind kind, int stages, int micro, int virt, cop ***ord_out, int **nord_out,
                          char *err, size_t errlen)
{
    int per_stage = 3 * micro * virt; /* compute ops per stage, at most */
    cop **ord = calloc((size_t)stages, sizeof *ord);
    int *nord = calloc((size_t)stages, sizeof *nord);
    int rc = -1;
    if (!ord || !nord) goto out;
    for (int st = 0; st < stages; st++)
        if (!(ord[st] = malloc(sizeof(cop) * (size_t)per_stage))) goto out;
    if (kind == SCHED_ZBH1) {
        if (order_zbh1(stages, micro, ord, nord) != 0) {
            fail(err, errlen, "zb-h1: list scheduling did not finish (stages %d, micro %d)",
                 stages, micro);
            goto out;
        }
    } else {
        for (int st = 0; st < stages; st++) {
            if (kind == SCHED_GPIPE) order_gpipe(micro, st, ord[st], &nord[st]);
            else if (kind == SCHED_INTERLEAVED)
                order_interleaved(stages, micro, virt, st, ord[st], &nord[st]);
            else order_1f1b(stages, micro, st, ord[st], &nord[st]);
        }
    }
    rc = 0;
out:
    if (rc != 0) {
        if (ord)
            for (int st = 0; st < stages; st++) free(ord[st]);
        free(ord);
        free(nord);
        if (err && errlen && !err[0]) fail(err, errlen, "%s: out of memory", sched_name(kind));
        ord = NULL, nord = NULL;
    }
    *ord_out = ord;
    *nord_out = nord;
    return rc;
}

/* The slot count emit_stage gives the order: a FWD takes a slot, a BWD (or
 * the BWD_WEIGHT of a split backward) frees one; messages take none. */
static int order_slots(const cop *ord, int n)
{
    int live = 0, peak = 0;
    for (int i = 0; i < n; i++) {
        if (ord[i].op == 'F' && ++live > peak) peak = live;
        else if (ord[i].op == 'B' || ord[i].op == 'W') live--;
    }
    return peak;
}

/* The most input-gradient halves ('I') whose weight half ('W') is still to
 * come: activation-gradient sets held open at once (at least 1). */
static int order_open_sets(const cop *ord, int n)
{
    int open = 0, peak = 1;
    for (int i = 0; i < n; i++) {
        if (ord[i].op == 'I' && ++open > peak) peak = open;
        else if (ord[i].op == 'W') open--;
    }
    return peak;
}

/* The slots of stage `only`, or (only < 0) the most of any stage; each, if
 * not NULL, gets every stage's, and sets every stage's order_open_sets. */
static int slots_of(sched_kind kind, int stages, int micro, int virt, int only, int *each, int *sets)
{
    if (only >= stages ||
        kind == SCHED_2BW || (unsigned)kind >= SCHED__COUNT || stages < 1 || micro < 1 || virt < 1 ||
        (kind == SCHED_INTERLEAVED ? micro % stages != 0 : virt != 1) ||
        (long)stages * micro * virt > (1L << 24))
        return -1;
    cop **ord;
    int *nord, peak = 0;
    if (compute_orders(kind, stages, micro, virt, &ord, &nord, NULL, 0) != 0) return -1;
    for (int st = 0; st < stages; st++) {
        int k = order_slots(ord[st], nord[st]);
        if ((only < 0 || st == only) && k > peak) peak = k;
        if (each) each[st] = k;
        if (sets) sets[st] = order_open_sets(ord[st], nord[st]);
        free(ord[st]);
    }
    free(ord);
    free(nord);
    return peak;
}

int schedule_peak_slots(sched_kind kind, int stages, int micro, int virt)
{
    return slots_of(kind, stages, micro, virt, -1, NULL, NULL);
}

int schedule_stage_slots(sched_kind kind, int stages, int micro, int virt, int stage)
{
    return stage < 0 ? -1 : slots_of(kind, stages, micro, virt, stage, NULL, NULL);
}

int schedule_each_stage_slots(sched_kind kind, int stages, int micro, int virt, int *slots, int *grad_sets)
{
    return slots_of(kind, stages, micro, virt, -1, slots, grad_sets) < 0 ? -1 : 0;
}

int schedule_build(schedule *s, sched_kind kind, int stages, int micro, int virt,
                   char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (err && errlen) err[0] = 0;
    if ((unsigned)kind >= SCHED__COUNT) {
        fail(err, errlen, "unknown schedule kind %d", (int)kind);
        return -1;
    }
    const char *name = sched_name(kind);
    if (stages < 1 || stages > 4096 || micro < 1 || micro > (1 << 20)) {
        fail(err, errlen, "%s: stages = %d and micro = %d must be in 1..4096 and 1..%d",
             name, stages, micro, 1 << 20);
        return -1;
    }
    if (kind == SCHED_INTERLEAVED) {
        if (virt < 2 || virt > 64) {
            fail(err, errlen, "interleaved: virt = %d chunks per rank must be in 2..64 "
                 "(use 1f1b for one chunk per rank)", virt);
            return -1;
        }
        if (micro % stages != 0) {
            fail(err, errlen, "interleaved: micro %% stages == 0 is required (micro = %d, "
                 "stages = %d): microbatches go through the chunks in groups of %d",
                 micro, stages, stages);
            return -1;
        }
    } else if (virt != 1) {
        fail(err, errlen, "%s: virt = %d, but only interleaved has more than one chunk per rank",
             name, virt);
        return -1;
    }
    if (kind == SCHED_2BW && micro < stages) {
        fail(err, errlen, "pipedream-2bw: micro = %d microbatches per step must be at least "
             "stages = %d: without a flush each step's 1F1B must reach its steady state", micro, stages);
        return -1;
    }
    if ((long)stages * micro * virt > (1L << 24)) {
        fail(err, errlen, "%s: stages * micro * virt = %ld forward ops is over %d", name,
             (long)stages * micro * virt, 1 << 24);
        return -1;
    }

    s->kind = kind;
    s->stages = stages;
    s->micro = micro;
    s->virt = virt;
    s->chunks = stages * virt;
    s->split_backward = kind == SCHED_ZBH1;
    s->weight_delay = kind == SCHED_2BW;
    int batch = micro;
    if (kind == SCHED_2BW) s->micro = micro = 3 * batch; /* 1F1B over three batches, then cut */
    s->ins = calloc((size_t)stages, sizeof *s->ins);
    s->n = calloc((size_t)stages, sizeof *s->n);
    s->slots = calloc((size_t)stages, sizeof *s->slots);
    s->bufs = calloc((size_t)stages, sizeof *s->bufs);
    cop **ord = NULL;
    int *nord = NULL;
    int rc = -1;
    if (!s->ins || !s->n || !s->slots || !s->bufs) goto out;
    if (compute_orders(kind, stages, micro, virt, &ord, &nord, err, errlen) != 0) goto out;
    if (lower(s, ord, nord, err, errlen) != 0) goto out;
    if (kind == SCHED_2BW && schedule_split_2bw(s, batch, err, errlen) != 0) goto out;
    rc = 0;
out:
    if (ord)
        for (int st = 0; st < stages; st++) free(ord[st]);
    free(ord);
    free(nord);
    if (rc != 0) {
        if (err && errlen && !err[0]) fail(err, errlen, "%s: out of memory", name);
        schedule_free(s);
    }
    return rc;
}
