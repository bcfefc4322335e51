/* verify.c: runs all ranks' instruction lists together under rendezvous
 * semantics and reports the first violation (see verify.h). */
#include "verify.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ACT_PART / GRAD_PART: this rank's slice of a split message arrived (its
 * GATHER then sets ACT_IN / GRAD_IN) */
enum { F_DONE = 1, B_DONE = 2, W_DONE = 4, ACT_IN = 8, GRAD_IN = 16, ACT_PART = 32, GRAD_PART = 64 };
enum { DIR_SEND, DIR_RECV };

typedef struct {
    int dir;
    sched_msg msg;
} part;

typedef struct {
    const verify_rank *r;
    int pc, done, checked;
    int pdone[2];              /* which parts of the current instruction matched */
    unsigned char *flags;      /* per (m, chunk) key */
    int *fwd_at;               /* per key: index of its FWD */
    int *slot_key, *slot_at;   /* per slot: holder key and its FWD index, -1 free */
    int live;
    /* PipeDream-2BW's non-blocking tied-wte sends waiting for this rank, in the
     * order they were posted (MPI matches them in that order) */
    sched_msg *mail;
    int nmail;
    /* keys are (m, local chunk): the chunks this rank's instructions name */
    int *cloc, *cglob, nloc;   /* global chunk -> local index (-1), and back */
} rstate;

typedef struct {
    const verify_input *in;
    rstate *rs;
    int nc;                    /* chunk indices are below nc */
    int *rank_at, nids;        /* rank id -> index when ids are small; else NULL */
    int *group_at, ngids;      /* group id -> index of its first entry, likewise */
    char *err;
    size_t errlen;
} vctx;

static int verr(vctx *v, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (v->err && v->errlen)
        vsnprintf(v->err, v->errlen, fmt, ap);
    va_end(ap);
    return -1;
}

/* "rank 1 #7 RECV_GRAD m2 c0 from rank 2" */
static const char *ref(const vctx *v, int r, int pc, char *buf, size_t len)
{
    char s[160];
    sched_instr_str(&v->in->ranks[r].ins[pc], s, sizeof s);
    snprintf(buf, len, "rank %d #%d %s", v->in->ranks[r].rank, pc, s);
    return buf;
}

static int is_compute(sched_op op)
{
    return op == SI_FWD || op == SI_BWD || op == SI_BWD_INPUT || op == SI_BWD_WEIGHT;
}

/* The point-to-point parts of an instruction (0 for non-messages). */
static int parts_of(const sched_instr *in, part out[2])
{
    switch (in->op) {
    case SI_SEND_ACT: case SI_RECV_ACT: case SI_SEND_GRAD: case SI_RECV_GRAD:
        out[0].dir = in->op == SI_SEND_ACT || in->op == SI_SEND_GRAD ? DIR_SEND : DIR_RECV;
        out[0].msg.kind = in->op == SI_SEND_ACT || in->op == SI_RECV_ACT ? MSG_ACT : MSG_GRAD;
        out[0].msg.m = in->m;
        out[0].msg.chunk = in->chunk;
        out[0].msg.peer = in->peer;
        return 1;
    case SI_SENDRECV:
        out[0].dir = DIR_SEND;
        out[0].msg = in->send;
        out[1].dir = DIR_RECV;
        out[1].msg = in->recv;
        return 2;
    default:
        return 0;
    }
}

static int is_tied(sched_op op) { return op == SI_SEND_TIED || op == SI_RECV_TIED; }

/* group-wide: COLLECTIVE and scatter/gather's GATHER */
static int is_coll(sched_op op) { return op == SI_COLLECTIVE || op == SI_GATHER; }

/* Two members at collectives of one group agree: the same tag, and for a
 * GATHER the same message. */
static int same_coll(const sched_instr *a, const sched_instr *b)
{
    if (a->op != b->op || strcmp(a->tag, b->tag) != 0) return 0;
    return a->op != SI_GATHER || (a->recv.kind == b->recv.kind && a->m == b->m && a->chunk == b->chunk);
}

static int find_rank(const vctx *v, int id)
{
    if (v->rank_at) return id >= 0 && id < v->nids ? v->rank_at[id] : -1;
    for (int i = 0; i < v->in->nranks; i++)
        if (v->in->ranks[i].rank == id) return i;
    return -1;
}

static const verify_group *find_group(const vctx *v, int id)
{
    if (v->group_at) return id >= 0 && id < v->ngids && v->group_at[id] >= 0 ? &v->in->groups[v->group_at[id]] : NULL;
    for (int i = 0; i < v->in->ngroups; i++)
        if (v->in->groups[i].id == id) return &v->in->groups[i];
    return NULL;
}

static int is_member(const verify_group *g, int rank)
{
    for (int i = 0; i < g->nmembers; i++)
        if (g->members[i] == rank) return 1;
    return 0;
}

/* ---- static checks before running ----------------------------------- */

static int precheck(vctx *v, int *max_m, int *max_c)
{
    const verify_input *in = v->in;
    char b[256];
    *max_m = *max_c = 0;
    for (int i = 0; i < in->ngroups; i++) {
        const verify_group *g = &in->groups[i];
        if (find_group(v, g->id) != g)
            return verr(v, "group %d appears twice in the input", g->id);
        for (int k = 0; k < g->nmembers; k++) {
            if (find_rank(v, g->members[k]) < 0)
                return verr(v, "group %d lists rank %d, which has no instruction list", g->id,
                            g->members[k]);
            for (int j = 0; j < k; j++)
                if (g->members[j] == g->members[k])
                    return verr(v, "group %d lists rank %d twice", g->id, g->members[k]);
        }
    }
    for (int r = 0; r < in->nranks; r++) {
        const verify_rank *vr = &in->ranks[r];
        if (find_rank(v, vr->rank) != r)
            return verr(v, "rank %d appears twice in the input", vr->rank);
        if (vr->slots < 0 || vr->slots > (1 << 20) || vr->n < 0 || (vr->n && !vr->ins))
            return verr(v, "rank %d: bad instruction count or slot count", vr->rank);
        for (int pc = 0; pc < vr->n; pc++) {
            const sched_instr *ins = &vr->ins[pc];
            part p[2];
            int np = parts_of(ins, p);
            if ((unsigned)ins->op >= SI__COUNT)
                return verr(v, "rank %d #%d: unknown instruction kind %d", vr->rank, pc,
                            (int)ins->op);
            if (is_compute(ins->op)) {
                if (ins->m < 0 || ins->chunk < 0)
                    return verr(v, "%s: negative microbatch or chunk", ref(v, r, pc, b, sizeof b));
                if (ins->m > *max_m) *max_m = ins->m;
                if (ins->chunk > *max_c) *max_c = ins->chunk;
            }
            for (int k = 0; k < np; k++) {
                int q = find_rank(v, p[k].msg.peer);
                if (p[k].msg.m < 0 || p[k].msg.chunk < 0 ||
                    (p[k].msg.kind != MSG_ACT && p[k].msg.kind != MSG_GRAD))
                    return verr(v, "%s: bad message", ref(v, r, pc, b, sizeof b));
                if (q < 0 || q == r)
                    return verr(v, "%s: peer %d is %s", ref(v, r, pc, b, sizeof b),
                                p[k].msg.peer, q < 0 ? "not a rank of the input" : "the rank itself");
                if (p[k].msg.m > *max_m) *max_m = p[k].msg.m;
                if (p[k].msg.chunk > *max_c) *max_c = p[k].msg.chunk;
            }
            if (is_tied(ins->op)) {
                const sched_msg *g = ins->op == SI_SEND_TIED ? &ins->send : &ins->recv;
                int q = find_rank(v, g->peer);
                if (q < 0 || q == r || g->m < 0 ||
                    (g->kind != MSG_TIED_GRAD && g->kind != MSG_TIED_WEIGHT))
                    return verr(v, "%s: bad tied-wte message", ref(v, r, pc, b, sizeof b));
            }
            if (ins->op == SI_GATHER) {
                if (!in->split)
                    return verr(v, "%s: a GATHER, but the messages are not split", ref(v, r, pc, b, sizeof b));
                if (ins->m < 0 || ins->chunk < 0 || (ins->recv.kind != MSG_ACT && ins->recv.kind != MSG_GRAD))
                    return verr(v, "%s: bad message", ref(v, r, pc, b, sizeof b));
                if (ins->m > *max_m) *max_m = ins->m;
                if (ins->chunk > *max_c) *max_c = ins->chunk;
            }
            if (is_coll(ins->op)) {
                const verify_group *g = find_group(v, ins->group);
                if (!g || !is_member(g, vr->rank))
                    return verr(v, "%s: rank %d is not a member of group %d%s",
                                ref(v, r, pc, b, sizeof b), vr->rank, ins->group,
                                g ? "" : " (no such group)");
                if (memchr(ins->tag, 0, sizeof ins->tag) == NULL)
                    return verr(v, "rank %d #%d: collective tag is not terminated", vr->rank, pc);
            }
        }
    }
    if (in->chunks > 0 && *max_c >= in->chunks)
        return verr(v, "chunk %d is out of range: the input has %d chunks", *max_c, in->chunks);
    return 0;
}

/* ---- local effects ---------------------------------------------------- */

/* The rank's key of (m, c), or -1 if it never names chunk c. */
static int key_of(const vctx *v, int r, int m, int c)
{
    const rstate *rs = &v->rs[r];
    if (c < 0 || c >= v->nc || rs->cloc[c] < 0) return -1;
    return m * rs->nloc + rs->cloc[c];
}

static int key_m(const rstate *rs, int key) { return key / rs->nloc; }
static int key_c(const rstate *rs, int key) { return rs->cglob[key % rs->nloc]; }
static unsigned char flags_of(const rstate *rs, int key) { return key < 0 ? 0 : rs->flags[key]; }

static int check_slot(vctx *v, int r, int pc, int key)
{
    rstate *rs = &v->rs[r];
    const sched_instr *ins = &rs->r->ins[pc];
    char b[256];
    int s = ins->slot;
    if (s >= 0 && s < rs->r->slots && rs->slot_key[s] == key) return 0;
    if (s < 0 || s >= rs->r->slots)
        return verr(v, "%s: slot %d is outside the %d reserved", ref(v, r, pc, b, sizeof b), s,
                    rs->r->slots);
    if (rs->slot_key[s] < 0)
        return verr(v, "%s: slot %d is free, but FWD m%d c%d (#%d) stored its activations in "
                    "another slot", ref(v, r, pc, b, sizeof b), s, ins->m, ins->chunk,
                    rs->fwd_at[key]);
    return verr(v, "%s: slot %d holds m%d c%d (FWD #%d), not m%d c%d",
                ref(v, r, pc, b, sizeof b), s, key_m(rs, rs->slot_key[s]),
                key_c(rs, rs->slot_key[s]), rs->slot_at[s], ins->m, ins->chunk);
}

static void release(rstate *rs, int slot)
{
    rs->slot_key[slot] = rs->slot_at[slot] = -1;
    rs->live--;
}

static int run_fwd(vctx *v, int r, int pc, int key)
{
    rstate *rs = &v->rs[r];
    const sched_instr *ins = &rs->r->ins[pc];
    char b[256];
    int c = ins->chunk, s = ins->slot;
    if (rs->flags[key] & F_DONE)
        return verr(v, "%s runs twice (first at #%d)", ref(v, r, pc, b, sizeof b), rs->fwd_at[key]);
    if (v->in->chunks > 0 && c > 0 && !(rs->flags[key] & ACT_IN) &&
        !(flags_of(rs, key_of(v, r, ins->m, c - 1)) & F_DONE))
        return verr(v, "%s runs before its input activation arrived (no RECV_ACT m%d c%d%s "
                    "or FWD m%d c%d before it)", ref(v, r, pc, b, sizeof b), ins->m, c,
                    v->in->split ? " and its GATHER" : "", ins->m, c - 1);
    if (rs->live + 1 > rs->r->slots)
        return verr(v, "%s: buffer over-use, %d live activations exceed the %d reserved slots",
                    ref(v, r, pc, b, sizeof b), rs->live + 1, rs->r->slots);
    if (s < 0 || s >= rs->r->slots)
        return verr(v, "%s: slot %d is outside the %d reserved", ref(v, r, pc, b, sizeof b), s,
                    rs->r->slots);
    if (rs->slot_key[s] >= 0)
        return verr(v, "%s: slot %d reused while live (holds m%d c%d from FWD #%d)",
                    ref(v, r, pc, b, sizeof b), s, key_m(rs, rs->slot_key[s]),
                    key_c(rs, rs->slot_key[s]), rs->slot_at[s]);
    rs->slot_key[s] = key;
    rs->slot_at[s] = pc;
    rs->live++;
    rs->flags[key] |= F_DONE;
    rs->fwd_at[key] = pc;
    return 0;
}

static int run_bwd(vctx *v, int r, int pc, int key)
{
    rstate *rs = &v->rs[r];
    const sched_instr *ins = &rs->r->ins[pc];
    char b[256];
    int c = ins->chunk;
    unsigned char f = rs->flags[key];
    if (!(f & F_DONE))
        return verr(v, "%s: backward before forward (no FWD m%d c%d on rank %d before it)",
                    ref(v, r, pc, b, sizeof b), ins->m, c, rs->r->rank);
    if (ins->op == SI_BWD_WEIGHT) {
        if (!(f & B_DONE))
            return verr(v, "%s runs before its BWD_INPUT", ref(v, r, pc, b, sizeof b));
        if (f & W_DONE)
            return verr(v, "%s: weight gradient computed twice", ref(v, r, pc, b, sizeof b));
    } else {
        if (f & B_DONE)
            return verr(v, "%s: input gradient computed twice", ref(v, r, pc, b, sizeof b));
        if (v->in->chunks > 0 && c < v->in->chunks - 1 && !(f & GRAD_IN) &&
            !(flags_of(rs, key_of(v, r, ins->m, c + 1)) & B_DONE))
            return verr(v, "%s runs before its output gradient arrived (no RECV_GRAD m%d c%d%s "
                        "or backward of m%d c%d before it)", ref(v, r, pc, b, sizeof b),
                        ins->m, c, v->in->split ? " and its GATHER" : "", ins->m, c + 1);
    }
    if (check_slot(v, r, pc, key) < 0) return -1;
    if (ins->op != SI_BWD_INPUT) release(rs, ins->slot);
    rs->flags[key] |= ins->op == SI_BWD ? B_DONE | W_DONE
                      : ins->op == SI_BWD_INPUT ? B_DONE : W_DONE;
    return 0;
}

/* Sends must follow the compute that produces them (only with chunks known). */
static int head_checks(vctx *v, int r)
{
    rstate *rs = &v->rs[r];
    part p[2];
    char b[256];
    int np = parts_of(&rs->r->ins[rs->pc], p);
    rs->checked = 1;
    if (v->in->chunks <= 0) return 0;
    for (int k = 0; k < np; k++) {
        if (p[k].dir != DIR_SEND) continue;
        int m = p[k].msg.m, c = p[k].msg.chunk;
        int from = p[k].msg.kind == MSG_ACT ? c - 1 : c + 1;
        if (from < 0 || from >= v->in->chunks)
            return verr(v, "%s: no chunk %d produces this message", ref(v, r, rs->pc, b, sizeof b), from);
        unsigned char need = p[k].msg.kind == MSG_ACT ? F_DONE : B_DONE;
        if (!(flags_of(rs, key_of(v, r, m, from)) & need))
            return verr(v, "%s: sent before %s m%d c%d produced it", ref(v, r, rs->pc, b, sizeof b),
                        p[k].msg.kind == MSG_ACT ? "FWD" : "the backward of", m, from);
    }
    return 0;
}

static int finish_rank(vctx *v, int r)
{
    rstate *rs = &v->rs[r];
    for (int s = 0; s < rs->r->slots; s++) {
        int key = rs->slot_key[s];
        if (key < 0) continue;
        if (rs->flags[key] & B_DONE)
            return verr(v, "rank %d: m%d c%d has BWD_INPUT but no BWD_WEIGHT (slot %d, FWD #%d, "
                        "never released)", rs->r->rank, key_m(rs, key), key_c(rs, key), s, rs->slot_at[s]);
        return verr(v, "rank %d: activation of m%d c%d (slot %d, FWD #%d) is never released: no "
                    "backward", rs->r->rank, key_m(rs, key), key_c(rs, key), s, rs->slot_at[s]);
    }
    return 0;
}

/* Local effects of the current instruction once all its parts matched; then
 * move to the next one. */
static int complete(vctx *v, int r)
{
    rstate *rs = &v->rs[r];
    const sched_instr *ins = &rs->r->ins[rs->pc];
    part p[2];
    char b[256];
    int np = parts_of(ins, p);
    if (ins->op == SI_FWD) {
        if (run_fwd(v, r, rs->pc, key_of(v, r, ins->m, ins->chunk)) < 0) return -1;
    } else if (is_compute(ins->op)) {
        if (run_bwd(v, r, rs->pc, key_of(v, r, ins->m, ins->chunk)) < 0) return -1;
    }
    for (int k = 0; k < np; k++) {
        if (p[k].dir != DIR_RECV) continue;
        unsigned char bit = p[k].msg.kind == MSG_ACT ? ACT_IN : GRAD_IN;
        if (v->in->split) bit = p[k].msg.kind == MSG_ACT ? ACT_PART : GRAD_PART;
        unsigned char *f = &rs->flags[key_of(v, r, p[k].msg.m, p[k].msg.chunk)];
        if (*f & bit)
            return verr(v, "%s: message received twice", ref(v, r, rs->pc, b, sizeof b));
        *f |= bit;
    }
    if (ins->op == SI_GATHER) {
        int act = ins->recv.kind == MSG_ACT;
        unsigned char *f = &rs->flags[key_of(v, r, ins->m, ins->chunk)];
        if (!(*f & (act ? ACT_PART : GRAD_PART)))
            return verr(v, "%s: gathers a message whose slice rank %d has not received",
                        ref(v, r, rs->pc, b, sizeof b), rs->r->rank);
        if (*f & (act ? ACT_IN : GRAD_IN))
            return verr(v, "%s: message gathered twice", ref(v, r, rs->pc, b, sizeof b));
        *f |= act ? ACT_IN : GRAD_IN;
    }
    rs->pc++;
    rs->pdone[0] = rs->pdone[1] = 0;
    rs->checked = 0;
    if (rs->pc == rs->r->n) {
        rs->done = 1;
        return finish_rank(v, r);
    }
    return 0;
}

static int same_msg(const sched_msg *a, const sched_msg *b)
{
    return a->kind == b->kind && a->m == b->m && a->chunk == b->chunk;
}

/* 1: moved, 0: blocked, -1: violation. */
static int try_step(vctx *v, int r)
{
    rstate *rs = &v->rs[r];
    char b1[256], b2[256];
    if (rs->done) return 0;
    if (!rs->checked && head_checks(v, r) < 0) return -1;
    const sched_instr *ins = &rs->r->ins[rs->pc];
    part p[2];
    int np = parts_of(ins, p);

    if (is_coll(ins->op)) {
        const verify_group *g = find_group(v, ins->group);
        for (int i = 0; i < g->nmembers; i++) {
            rstate *q = &v->rs[find_rank(v, g->members[i])];
            if (q == rs) continue;
            if (q->done) return 0;
            const sched_instr *qi = &q->r->ins[q->pc];
            if (!is_coll(qi->op) || qi->group != ins->group) return 0;
            if (!same_coll(qi, ins))
                return verr(v, "collective order differs in group %d: %s, but %s",
                            ins->group, ref(v, r, rs->pc, b1, sizeof b1),
                            ref(v, (int)(q - v->rs), q->pc, b2, sizeof b2));
        }
        for (int i = 0; i < g->nmembers; i++)
            if (complete(v, find_rank(v, g->members[i])) < 0) return -1;
        return 1;
    }
    if (ins->op == SI_SEND_TIED) { /* never waits: into the receiver's mailbox */
        rstate *q = &v->rs[find_rank(v, ins->send.peer)];
        sched_msg *box = realloc(q->mail, sizeof *box * (size_t)(q->nmail + 1));
        if (!box) return verr(v, "out of memory");
        q->mail = box;
        box[q->nmail] = ins->send;
        box[q->nmail++].peer = rs->r->rank;
        return complete(v, r) < 0 ? -1 : 1;
    }
    if (ins->op == SI_RECV_TIED) { /* the oldest message of this kind from the peer */
        for (int i = 0; i < rs->nmail; i++) {
            sched_msg *g = &rs->mail[i];
            if (g->peer != ins->recv.peer || g->kind != ins->recv.kind) continue;
            if (g->m != ins->recv.m)
                return verr(v, "%s: the oldest tied-wte message of this kind from rank %d is of "
                            "batch m%d (MPI matches in order)", ref(v, r, rs->pc, b1, sizeof b1),
                            g->peer, g->m);
            memmove(g, g + 1, sizeof *g * (size_t)(rs->nmail - i - 1));
            rs->nmail--;
            return complete(v, r) < 0 ? -1 : 1;
        }
        return 0;
    }
    if (np == 0) return complete(v, r) < 0 ? -1 : 1;

    int moved = 0;
    for (int k = 0; k < np; k++) {
        if (rs->pdone[k]) continue;
        int qi = find_rank(v, p[k].msg.peer);
        rstate *q = &v->rs[qi];
        if (q->done) continue;
        if (!q->checked && head_checks(v, qi) < 0) return -1;
        part qp[2];
        int nq = parts_of(&q->r->ins[q->pc], qp);
        for (int j = 0; j < nq; j++) {
            if (q->pdone[j] || qp[j].dir == p[k].dir || qp[j].msg.peer != rs->r->rank ||
                !same_msg(&qp[j].msg, &p[k].msg))
                continue;
            rs->pdone[k] = q->pdone[j] = 1;
            moved = 1;
            if (q->pdone[0] && (nq < 2 || q->pdone[1]) && complete(v, qi) < 0) return -1;
            break;
        }
    }
    if (rs->pdone[0] && (np < 2 || rs->pdone[1])) return complete(v, r) < 0 ? -1 : 1;
    return moved;
}

/* ---- when nothing can move ---------------------------------------------- */

static void describe_diff(const sched_msg *a, const sched_msg *b, char *buf, size_t len)
{
    int n = 0;
    buf[0] = 0;
    if (a->kind != b->kind)
        n += snprintf(buf + n, len - n, "%skind %s vs %s", n ? ", " : "",
                      a->kind == MSG_ACT ? "ACT" : "GRAD", b->kind == MSG_ACT ? "ACT" : "GRAD");
    if (a->m != b->m && (size_t)n < len)
        n += snprintf(buf + n, len - n, "%smicrobatch %d vs %d", n ? ", " : "", a->m, b->m);
    if (a->chunk != b->chunk && (size_t)n < len)
        snprintf(buf + n, len - n, "%schunk %d vs %d", n ? ", " : "", a->chunk, b->chunk);
}

/* The rank r waits for (first unmatched partner), or -1. */
static int waits_for(const vctx *v, int r)
{
    const rstate *rs = &v->rs[r];
    const sched_instr *ins = &rs->r->ins[rs->pc];
    if (is_coll(ins->op)) {
        const verify_group *g = find_group(v, ins->group);
        for (int i = 0; i < g->nmembers; i++) {
            int q = find_rank(v, g->members[i]);
            const rstate *qs = &v->rs[q];
            if (q == r) continue;
            if (qs->done || !is_coll(qs->r->ins[qs->pc].op) ||
                qs->r->ins[qs->pc].group != ins->group)
                return q;
        }
        return -1;
    }
    if (ins->op == SI_RECV_TIED) return find_rank(v, ins->recv.peer);
    part p[2];
    int np = parts_of(ins, p);
    for (int k = 0; k < np; k++)
        if (!rs->pdone[k]) return find_rank(v, p[k].msg.peer);
    return -1;
}

static int diagnose(vctx *v)
{
    int n = v->in->nranks;
    char b1[256], b2[256], d[96];
    /* partners that finished, and pairs waiting on each other with different messages */
    for (int r = 0; r < n; r++) {
        rstate *rs = &v->rs[r];
        if (rs->done) continue;
        const sched_instr *ins = &rs->r->ins[rs->pc];
        if (is_coll(ins->op)) {
            int q = waits_for(v, r);
            if (q >= 0 && v->rs[q].done)
                return verr(v, "%s waits for rank %d, which finished without entering it",
                            ref(v, r, rs->pc, b1, sizeof b1), v->rs[q].r->rank);
            continue;
        }
        if (ins->op == SI_RECV_TIED) {
            int q = waits_for(v, r);
            if (v->rs[q].done)
                return verr(v, "unmatched message: %s waits, but rank %d has finished without "
                            "sending it", ref(v, r, rs->pc, b1, sizeof b1), v->rs[q].r->rank);
            continue;
        }
        part p[2], qp[2];
        int np = parts_of(ins, p);
        for (int k = 0; k < np; k++) {
            if (rs->pdone[k]) continue;
            int qi = find_rank(v, p[k].msg.peer);
            rstate *q = &v->rs[qi];
            if (q->done)
                return verr(v, "unmatched message: %s waits, but rank %d has finished without "
                            "the matching %s", ref(v, r, rs->pc, b1, sizeof b1), q->r->rank,
                            p[k].dir == DIR_SEND ? "receive" : "send");
            int nq = parts_of(&q->r->ins[q->pc], qp);
            for (int j = 0; j < nq; j++)
                if (!q->pdone[j] && qp[j].dir != p[k].dir && qp[j].msg.peer == rs->r->rank) {
                    describe_diff(&p[k].msg, &qp[j].msg, d, sizeof d);
                    return verr(v, "mismatched messages: %s does not match %s (%s)",
                                ref(v, r, rs->pc, b1, sizeof b1),
                                ref(v, qi, q->pc, b2, sizeof b2), d);
                }
        }
    }
    /* every waiting rank waits for another waiting rank: follow the first edges */
    int *pos = malloc(sizeof(int) * (size_t)n), *path = malloc(sizeof(int) * (size_t)n);
    if (!pos || !path) {
        free(pos);
        free(path);
        return verr(v, "deadlock (out of memory describing it)");
    }
    for (int i = 0; i < n; i++) pos[i] = -1;
    int r = 0, len = 0;
    while (v->rs[r].done) r++;
    while (r >= 0 && pos[r] < 0) {
        pos[r] = len;
        path[len++] = r;
        r = waits_for(v, r);
    }
    size_t off = 0;
    off += snprintf(v->err + off, v->errlen - off, "deadlock, wait cycle: ");
    if (r < 0) r = path[0];
    for (int i = pos[r]; i < len && off < v->errlen; i++) {
        int a = path[i], bnext = i + 1 < len ? path[i + 1] : r;
        const sched_instr *ins = &v->rs[a].r->ins[v->rs[a].pc];
        const char *which = "";
        if (ins->op == SI_SENDRECV)
            which = v->rs[a].pdone[0] ? " (its receive)" : " (its send)";
        sched_instr_str(ins, b1, sizeof b1);
        off += snprintf(v->err + off, v->errlen - off, "rank %d waits at #%d %s for rank %d%s; ",
                        v->rs[a].r->rank, v->rs[a].pc, b1, v->rs[bnext].r->rank, which);
    }
    if (off < v->errlen)
        snprintf(v->err + off, v->errlen - off, "back to rank %d", v->rs[r].r->rank);
    free(pos);
    free(path);
    return -1;
}

/* ---- driver ------------------------------------------------------------ */

/* Per-rank state, keyed by (m, chunk) over the chunks the rank names. */
static int init_rank(vctx *v, int r, int max_m)
{
    rstate *rs = &v->rs[r];
    rs->r = &v->in->ranks[r];
    rs->cloc = malloc(sizeof(int) * (size_t)v->nc);
    rs->cglob = malloc(sizeof(int) * (size_t)v->nc);
    if (!rs->cloc || !rs->cglob) return verr(v, "out of memory");
    for (int c = 0; c < v->nc; c++) rs->cloc[c] = -1;
    for (int pc = 0; pc < rs->r->n; pc++) {
        const sched_instr *ins = &rs->r->ins[pc];
        part p[2];
        int np = parts_of(ins, p), cs[2], nc = 0;
        if (is_compute(ins->op) || ins->op == SI_GATHER) cs[nc++] = ins->chunk;
        for (int k = 0; k < np; k++)
            if (p[k].dir == DIR_RECV) cs[nc++] = p[k].msg.chunk; /* flags land on the receiver */
        for (int k = 0; k < nc; k++)
            if (rs->cloc[cs[k]] < 0) {
                rs->cglob[rs->nloc] = cs[k];
                rs->cloc[cs[k]] = rs->nloc++;
            }
    }
    long nkeys = (long)(max_m + 1) * (rs->nloc ? rs->nloc : 1);
    if (nkeys > (1L << 28)) return verr(v, "rank %d: microbatch indices are too large", rs->r->rank);
    rs->flags = calloc((size_t)nkeys, 1);
    rs->fwd_at = malloc(sizeof(int) * (size_t)nkeys);
    rs->slot_key = malloc(sizeof(int) * ((size_t)rs->r->slots + 1));
    rs->slot_at = malloc(sizeof(int) * ((size_t)rs->r->slots + 1));
    if (!rs->flags || !rs->fwd_at || !rs->slot_key || !rs->slot_at) return verr(v, "out of memory");
    for (long k = 0; k < nkeys; k++) rs->fwd_at[k] = -1;
    for (int s = 0; s <= rs->r->slots; s++) rs->slot_key[s] = rs->slot_at[s] = -1;
    rs->done = rs->r->n == 0;
    return 0;
}

int verify_run(const verify_input *in, char *err, size_t errlen)
{
    char fallback[512];
    vctx v = {in, NULL, 0, NULL, 0, NULL, 0, err, errlen};
    if (!err || errlen == 0) {
        v.err = fallback;
        v.errlen = sizeof fallback;
    }
    v.err[0] = 0;
    /* a group id -> index table when the ids are small (a search per
     * collective made a 1024-stage check take minutes); a repeated id keeps
     * its first entry, which precheck then reports */
    int max_gid = -1, small_g = 1;
    for (int i = 0; i < in->ngroups; i++) {
        if (in->groups[i].id < 0 || in->groups[i].id > 4 * in->ngroups + 1024) small_g = 0;
        else if (in->groups[i].id > max_gid) max_gid = in->groups[i].id;
    }
    if (small_g && (v.group_at = malloc(sizeof(int) * (size_t)(max_gid + 2)))) {
        v.ngids = max_gid + 1;
        for (int i = 0; i < v.ngids; i++) v.group_at[i] = -1;
        for (int i = in->ngroups - 1; i >= 0; i--) v.group_at[in->groups[i].id] = i;
    }
    /* and a rank id -> index table (precheck looks up every message's peer) */
    int max_id = -1, small = 1;
    for (int r = 0; r < in->nranks; r++) {
        if (in->ranks[r].rank < 0 || in->ranks[r].rank > 4 * in->nranks + 1024) small = 0;
        else if (in->ranks[r].rank > max_id) max_id = in->ranks[r].rank;
    }
    if (small && (v.rank_at = malloc(sizeof(int) * (size_t)(max_id + 2)))) {
        v.nids = max_id + 1;
        for (int i = 0; i < v.nids; i++) v.rank_at[i] = -1;
        for (int r = in->nranks - 1; r >= 0; r--) v.rank_at[in->ranks[r].rank] = r;
    }
    int max_m, max_c, rc = -1;
    if (precheck(&v, &max_m, &max_c) < 0) {
        free(v.group_at);
        free(v.rank_at);
        return -1;
    }
    v.nc = in->chunks > max_c + 1 ? in->chunks : max_c + 1;
    v.rs = calloc((size_t)in->nranks + 1, sizeof *v.rs);
    if (!v.rs) {
        free(v.rank_at);
        free(v.group_at);
        return verr(&v, "out of memory");
    }
    for (int r = 0; r < in->nranks; r++)
        if (init_rank(&v, r, max_m) < 0) goto out;
    for (int sweep = 0;; sweep++) {
        int moved = 0, all_done = 1;
        /* up the ranks, then down: a pipeline's gradients flow from the last
         * stage to the first, and sweeping only upwards moved them one stage
         * per sweep (a 1024-stage check took minutes) */
        for (int i = 0; i < in->nranks; i++) {
            int r = sweep % 2 == 0 ? i : in->nranks - 1 - i, st;
            while ((st = try_step(&v, r)) == 1) moved = 1;
            if (st < 0) goto out;
        }
        for (int r = 0; r < in->nranks; r++) all_done &= v.rs[r].done;
        if (all_done) {
            for (int r = 0; r < in->nranks; r++)
                if (v.rs[r].nmail) {
                    char s[160];
                    sched_instr probe;
                    memset(&probe, 0, sizeof probe);
                    probe.op = SI_SEND_TIED;
                    probe.send = v.rs[r].mail[0];
                    probe.send.peer = in->ranks[r].rank;
                    sched_instr_str(&probe, s, sizeof s);
                    verr(&v, "unmatched message: rank %d posted %s, which is never received",
                         v.rs[r].mail[0].peer, s);
                    goto out;
                }
            break;
        }
        if (!moved) {
            diagnose(&v);
            goto out;
        }
    }
    rc = 0;
out:
    for (int r = 0; r < in->nranks; r++) {
        free(v.rs[r].flags);
        free(v.rs[r].fwd_at);
        free(v.rs[r].slot_key);
        free(v.rs[r].slot_at);
        free(v.rs[r].cloc);
        free(v.rs[r].cglob);
        free(v.rs[r].mail);
    }
    free(v.rs);
    free(v.rank_at);
    free(v.group_at);
    return rc;
}

static int verify_schedule_once(const schedule *s, char *err, size_t errlen);

/* ---- the memo of verified schedules ------------------------------------ */

/* A schedule's every field as bytes: two schedules with the same bytes are
 * the same input to verify_schedule_once.  NULL when out of memory. */
typedef struct {
    unsigned char *b;
    size_t n, cap;
} bytes;

static void put(bytes *k, const void *p, size_t n)
{
    if (!k->b && k->cap) return; /* failed before */
    if (k->n + n > k->cap) {
        size_t cap = k->cap ? k->cap : 4096;
        while (cap < k->n + n) cap *= 2;
        unsigned char *b = realloc(k->b, cap);
        if (!b) {
            free(k->b);
            k->b = NULL;
            k->cap = 1;
            return;
        }
        k->b = b, k->cap = cap;
    }
    memcpy(k->b + k->n, p, n);
    k->n += n;
}

/* The lists without dslot: the memory pass numbers the activation-gradient
 * sets after the schedule pass verified the lists, and nothing here reads
 * them (the memory pass's own check does), so the lists simulate verifies
 * again are the same input. */
static void put_lists(bytes *k, sched_instr *const *lists, const int *n, int stages)
{
    put(k, n, sizeof(int) * (size_t)stages);
    for (int st = 0; st < stages; st++)
        for (int i = 0; i < n[st]; i++) {
            sched_instr in = lists[st][i];
            in.dslot = -1;
            put(k, &in, sizeof in);
        }
}

static bytes schedule_key(const schedule *s)
{
    bytes k = {NULL, 0, 0};
    int head[] = {s->kind, s->stages, s->micro, s->virt, s->chunks, s->split_backward, s->weight_delay,
                  s->tied, s->split, s->pro != NULL};
    put(&k, head, sizeof head);
    put(&k, s->slots, sizeof(int) * (size_t)s->stages);
    put(&k, s->bufs, sizeof(int) * (size_t)s->stages);
    put_lists(&k, s->ins, s->n, s->stages);
    if (s->pro) {
        put_lists(&k, s->pro, s->npro, s->stages);
        put_lists(&k, s->epi, s->nepi, s->stages);
    }
    return k;
}

/* Schedules that passed, byte for byte: a search (weft plan) builds and
 * prices many candidates with the same pipeline, and simulate verifies the
 * schedule the schedule pass verified.  Exact comparison, no hash trusted;
 * at most MEMO_BYTES kept, oldest dropped first.  Failures are never kept
 * (each run reports its own). */
enum { MEMO_SLOTS = 32 };
#define MEMO_BYTES ((size_t)192 << 20)
static bytes memo[MEMO_SLOTS];
static int memo_next;

static int memo_has(const bytes *k)
{
    for (int i = 0; i < MEMO_SLOTS; i++)
        if (memo[i].b && memo[i].n == k->n && memcmp(memo[i].b, k->b, k->n) == 0) return 1;
    return 0;
}

static void memo_add(bytes k)
{
    size_t total = k.n;
    for (int i = 0; i < MEMO_SLOTS; i++) total += memo[i].n;
    /* drop the oldest until it fits (or nothing is left) */
    for (int i = 0; i < MEMO_SLOTS && total > MEMO_BYTES; i++) {
        bytes *o = &memo[(memo_next + i) % MEMO_SLOTS];
        total -= o->n;
        free(o->b);
        *o = (bytes){NULL, 0, 0};
    }
    if (k.n > MEMO_BYTES) {
        free(k.b);
        return;
    }
    free(memo[memo_next].b);
    memo[memo_next] = k;
    memo_next = (memo_next + 1) % MEMO_SLOTS;
}

int schedule_verify(const schedule *s, char *err, size_t errlen)
{
    bytes k = schedule_key(s);
    if (k.b && memo_has(&k)) {
        free(k.b);
        return 0;
    }
    int rc = verify_schedule_once(s, err, errlen);
    if (rc == 0 && k.b) memo_add(k);
    else free(k.b);
    return rc;
}

static int verify_schedule_once(const schedule *s, char *err, size_t errlen)
{
    if (s->pro) { /* PipeDream-2BW: prologue + steady + steady + epilogue */
        schedule u;
        if (schedule_unroll_2bw(s, &u) != 0) {
            if (err && errlen) snprintf(err, errlen, "out of memory");
            return -1;
        }
        int rc = verify_schedule_once(&u, err, errlen);
        schedule_free(&u);
        return rc;
    }
    if (s->split > 1) {
        verify_tp t;
        if (verify_tp_build(s, &t) != 0) {
            if (err && errlen) snprintf(err, errlen, "out of memory");
            return -1;
        }
        int rc = verify_run(&t.in, err, errlen);
        verify_tp_free(&t);
        return rc;
    }
    verify_rank *ranks = calloc((size_t)s->stages, sizeof *ranks);
    if (!ranks) {
        if (err && errlen) snprintf(err, errlen, "out of memory");
        return -1;
    }
    for (int st = 0; st < s->stages; st++) {
        ranks[st].rank = st;
        ranks[st].ins = s->ins[st];
        ranks[st].n = s->n[st];
        ranks[st].slots = s->slots[st];
    }
    verify_input in = {ranks, s->stages, NULL, 0, s->chunks, 0};
    int rc = verify_run(&in, err, errlen);
    free(ranks);
    return rc;
}

int verify_tp_build(const schedule *s, verify_tp *out)
{
    int t = s->split > 1 ? s->split : 1, n = s->stages * t;
    memset(out, 0, sizeof *out);
    out->ranks = calloc((size_t)n, sizeof *out->ranks);
    out->groups = calloc((size_t)s->stages, sizeof *out->groups);
    out->members = malloc(sizeof(int) * (size_t)n);
    out->lists = calloc((size_t)n, sizeof *out->lists);
    if (!out->ranks || !out->groups || !out->members || !out->lists) goto oom;
    out->nlists = n;
    for (int st = 0; st < s->stages; st++) {
        out->groups[st] = (verify_group){st, out->members + st * t, t};
        for (int j = 0; j < t; j++) {
            int id = st * t + j, len = s->n[st];
            out->members[id] = id;
            sched_instr *l = malloc(sizeof *l * ((size_t)len + 1));
            if (!l) goto oom;
            memcpy(l, s->ins[st], sizeof *l * (size_t)len);
            /* tp rank j's peers are tp rank j of the other stages */
            for (int i = 0; i < len; i++) {
                if (l[i].peer >= 0) l[i].peer = l[i].peer * t + j;
                if (l[i].op == SI_SENDRECV) {
                    l[i].send.peer = l[i].send.peer * t + j;
                    l[i].recv.peer = l[i].recv.peer * t + j;
                }
                if (l[i].op == SI_SEND_TIED) l[i].send.peer = l[i].send.peer * t + j;
                if (l[i].op == SI_RECV_TIED) l[i].recv.peer = l[i].recv.peer * t + j;
            }
            out->lists[id] = l;
            out->ranks[id] = (verify_rank){id, l, len, s->slots[st]};
        }
    }
    out->in = (verify_input){out->ranks, n, out->groups, s->stages, s->chunks, s->split > 1};
    return 0;
oom:
    verify_tp_free(out);
    return -1;
}

void verify_tp_free(verify_tp *v)
{
    if (v->lists)
        for (int i = 0; i < v->nlists; i++) free(v->lists[i]);
    free(v->lists);
    free(v->ranks);
    free(v->groups);
    free(v->members);
    memset(v, 0, sizeof *v);
}
