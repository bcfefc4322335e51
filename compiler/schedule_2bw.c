/* schedule_2bw.c: PipeDream-2BW without a pipeline flush.
 *
 * The microbatches of consecutive steps flow through the pipeline as one 1F1B
 * stream: batch b+1's warm-up forwards run while batch b's last backwards
 * drain. schedule_build lowers 1F1B over three batches (3 * micro microbatches)
 * and this file cuts each stage's list after the last backward of each batch,
 * where that stage's OPTIM for the batch goes:
 *
 *   segment 0 = prologue + steady step (batch 0)
 *   segment 1 = steady step (batch 1)        <- the emitted step function
 *   segment 2 = epilogue (batch 2)
 *
 * The steady step of stage st runs batch b's forwards from its (p - st)-th on,
 * the first p - st - 1 forwards of batch b+1, and all of batch b's backwards;
 * the prologue runs the first p - st - 1 forwards of a batch; the epilogue
 * finishes a batch without starting the next. Segment 0 must end with segment 1
 * renumbered one batch back (1F1B's steady state is periodic), which is checked.
 *
 * Activation slots repeat with the batch: microbatch m of every batch uses
 * the same slot, so that one step function serves every step. At most
 * W = p - st microbatches are live at once and they are consecutive, so a
 * coloring of the cycle of `micro` positions in which any W cyclically
 * consecutive positions differ is enough: blocks of W or a few more positions,
 * colored 0, 1, ... within each block (W slots when W divides micro, a few
 * more otherwise).
 */
#include <stdlib.h>
#include <string.h>

#include "schedule.h"

static int fail2(char *err, size_t errlen, const char *msg, int st, int a, int b)
{
    if (err && errlen) snprintf(err, errlen, "pipedream-2bw: stage %d: %s (%d, %d)", st, msg, a, b);
    return -1;
}

/* Slot of microbatch position i (0 <= i < micro) with window w; *count slots. */
static int cyclic_slot(int i, int micro, int w, int *count)
{
    int q = micro / w, r = micro % w;  /* q blocks of w, r positions spread over them */
    int extra = r / q, more = r % q;   /* block j holds w + extra + (j < more) */
    *count = w + extra + (more > 0);
    for (int j = 0, at = 0; j < q; j++) {
        int size = w + extra + (j < more);
        if (i < at + size) return i - at;
        at += size;
    }
    return 0;
}

static int is_compute(sched_op op)
{
    return op == SI_FWD || op == SI_BWD || op == SI_BWD_INPUT || op == SI_BWD_WEIGHT;
}

/* Renumbers every microbatch the instruction names by delta. */
static sched_instr shifted(sched_instr in, int delta)
{
    if (is_compute(in.op) || (in.op >= SI_SEND_ACT && in.op <= SI_RECV_GRAD) || in.op == SI_GATHER) in.m += delta;
    if (in.op == SI_SENDRECV || in.op == SI_SEND_TIED) in.send.m += delta;
    if (in.op == SI_SENDRECV || in.op == SI_RECV_TIED || in.op == SI_GATHER) in.recv.m += delta;
    return in;
}

static int same_instr(const sched_instr *a, const sched_instr *b)
{
    if (a->op != b->op) return 0;
    if (a->op == SI_SENDRECV)
        return !memcmp(&a->send, &b->send, sizeof a->send) && !memcmp(&a->recv, &b->recv, sizeof a->recv);
    /* slots are renumbered afterwards */
    return a->m == b->m && a->chunk == b->chunk && a->peer == b->peer;
}

static sched_instr optim(void)
{
    sched_instr in;
    memset(&in, 0, sizeof in);
    in.op = SI_OPTIM;
    in.slot = in.peer = in.group = -1;
    return in;
}

/* Copies n instructions renumbered by delta into a new list with room for
 * `spare` more; NULL when out of memory. */
static sched_instr *copy_list(const sched_instr *from, int n, int delta, int spare)
{
    sched_instr *out = malloc(sizeof *out * (size_t)(n + spare + 1));
    if (out)
        for (int i = 0; i < n; i++) out[i] = shifted(from[i], delta);
    return out;
}

/* Index of the backward of microbatch m on the stage's list, or -1. */
static int find_bwd(const sched_instr *ins, int n, int m)
{
    for (int i = 0; i < n; i++)
        if ((ins[i].op == SI_BWD || ins[i].op == SI_BWD_INPUT) && ins[i].m == m) return i;
    return -1;
}

/* Staging buffers (received activations, input gradients waiting to be sent,
 * a stage's output waiting for its send: emit_step.c's staged_sends) are per
 * step: a message received in one segment must be consumed in it, an input
 * gradient sent in the segment that computed it, and an output likewise. */
static int check_staging(const sched_instr *ins, int from, int to, int st, int last, char *err, size_t errlen)
{
    for (int i = from; i < to; i++) {
        if (ins[i].op == SI_FWD && !last) {
            int sent = 0;
            for (int j = i + 1; j < to && !sent; j++)
                sent = (ins[j].op == SI_SEND_ACT && ins[j].m == ins[i].m) ||
                       (ins[j].op == SI_SENDRECV && ins[j].send.kind == MSG_ACT && ins[j].send.m == ins[i].m);
            if (!sent) return fail2(err, errlen, "an output is sent one step after its forward "
                                    "(instruction, microbatch)", st, i, ins[i].m);
        }
        const sched_instr *in = &ins[i];
        int recv_act = in->op == SI_RECV_ACT || (in->op == SI_SENDRECV && in->recv.kind == MSG_ACT);
        int m = in->op == SI_SENDRECV ? in->recv.m : in->m;
        if (recv_act) {
            int used = 0;
            for (int j = i + 1; j < to && !used; j++) used = ins[j].op == SI_FWD && ins[j].m == m;
            if (!used) return fail2(err, errlen, "an activation is received one step before its forward "
                                    "(instruction, microbatch)", st, i, m);
        }
        if (in->op == SI_BWD && st > 0) {
            int sent = 0;
            for (int j = i + 1; j < to && !sent; j++)
                sent = (ins[j].op == SI_SEND_GRAD && ins[j].m == in->m) ||
                       (ins[j].op == SI_SENDRECV && ins[j].send.kind == MSG_GRAD && ins[j].send.m == in->m);
            if (!sent) return fail2(err, errlen, "an input gradient is sent one step after its backward "
                                    "(instruction, microbatch)", st, i, in->m);
        }
    }
    return 0;
}

/* Replaces the SENDRECV at j by its send and then its receive; returns the
 * list's new length (the list has room). */
static int unfuse(sched_instr *ins, int n, int j)
{
    sched_instr both = ins[j], send = optim(), recv = optim();
    send.op = both.send.kind == MSG_ACT ? SI_SEND_ACT : SI_SEND_GRAD;
    send.m = both.send.m;
    send.chunk = both.send.chunk;
    send.peer = both.send.peer;
    recv.op = both.recv.kind == MSG_ACT ? SI_RECV_ACT : SI_RECV_GRAD;
    recv.m = both.recv.m;
    recv.chunk = both.recv.chunk;
    recv.peer = both.recv.peer;
    memmove(ins + j + 2, ins + j + 1, sizeof *ins * (size_t)(n - j - 1));
    ins[j] = send;
    ins[j + 1] = recv;
    return n + 1;
}

/* A SENDRECV right after a batch's last backward that sends its gradient
 * becomes a plain send (before the cut) and a plain receive (after it): the
 * received activation belongs to the next step. */
static int unfuse_after(sched_instr *ins, int n, int i)
{
    if (i + 1 >= n || ins[i + 1].op != SI_SENDRECV || ins[i + 1].send.kind != MSG_GRAD ||
        ins[i + 1].send.m != ins[i].m)
        return n;
    return unfuse(ins, n, i + 1);
}

static int split_stage(schedule *s, int st, int micro, char *err, size_t errlen)
{
    int n = s->n[st] - 1; /* without the final OPTIM */
    sched_instr *ins = realloc(s->ins[st], sizeof *ins * (size_t)(n + 4));
    if (!ins) return -1;
    s->ins[st] = ins;
    int cut[2];
    for (int b = 0; b < 2; b++) {
        int i = find_bwd(ins, n, b * micro + micro - 1);
        if (i < 0) return fail2(err, errlen, "no backward ends the batch (batch, microbatch)", st, b, b * micro + micro - 1);
        n = unfuse_after(ins, n, i);
        /* OPTIM after the backward and its plain gradient send, if that comes next */
        if (i + 1 < n && ins[i + 1].op == SI_SEND_GRAD && ins[i + 1].m == ins[i].m) i++;
        cut[b] = i + 1;
    }
    /* Where the steady step starts inside batch 0, the warm-up may have fused
     * its last send with the steady step's first receive: split them too. */
    int k = cut[0] - (cut[1] - cut[0]);
    if (k >= 0 && ins[k].op == SI_SENDRECV) {
        sched_instr first = shifted(ins[cut[0]], -micro);
        sched_msg r = ins[k].recv;
        if ((first.op == SI_RECV_ACT || first.op == SI_RECV_GRAD) && first.m == r.m &&
            first.chunk == r.chunk && (first.op == SI_RECV_ACT) == (r.kind == MSG_ACT)) {
            n = unfuse(ins, n, k);
            cut[0]++;
            cut[1]++;
        }
    }
    int len0 = cut[0], len1 = cut[1] - cut[0], len2 = n - cut[1];
    int last = st == s->stages - 1;
    if (check_staging(ins, 0, cut[0], st, last, err, errlen) || check_staging(ins, cut[0], cut[1], st, last, err, errlen) ||
        check_staging(ins, cut[1], n, st, last, err, errlen))
        return -1;
    if (len0 < len1) return fail2(err, errlen, "the first batch is shorter than the steady step", st, len0, len1);
    int npro = len0 - len1;
    for (int j = 0; j < len1; j++) {
        sched_instr want = shifted(ins[cut[0] + j], -micro);
        if (!same_instr(&ins[npro + j], &want))
            return fail2(err, errlen, "the steady state of 1F1B is not periodic (instruction, length)",
                         st, npro + j, len1);
    }
    /* spare room: 3 tied-wte instructions at most per list */
    sched_instr *pro = copy_list(ins, npro, micro, 3);
    sched_instr *mid = copy_list(ins + cut[0], len1, 0, 4);
    sched_instr *epi = copy_list(ins + cut[1], len2, -micro, 4);
    if (!pro || !mid || !epi) {
        free(pro);
        free(mid);
        free(epi);
        return -1;
    }
    mid[len1] = optim();
    epi[len2] = optim();
    free(s->ins[st]);
    s->ins[st] = mid;
    s->n[st] = len1 + 1;
    s->pro[st] = pro;
    s->npro[st] = npro;
    s->epi[st] = epi;
    s->nepi[st] = len2 + 1;
    return 0;
}

/* Slots repeat with the batch: microbatch m uses the slot of m % micro. */
static void cyclic_slots(schedule *s, int st, int micro)
{
    int w = s->slots[st], count = w;
    sched_instr *lists[3] = {s->pro[st], s->ins[st], s->epi[st]};
    int ns[3] = {s->npro[st], s->n[st], s->nepi[st]};
    for (int k = 0; k < 3; k++)
        for (int i = 0; i < ns[k]; i++)
            if (is_compute(lists[k][i].op))
                lists[k][i].slot = cyclic_slot(lists[k][i].m % micro, micro, w, &count);
    s->slots[st] = count;
}

int schedule_split_2bw(schedule *s, int micro, char *err, size_t errlen)
{
    int p = s->stages;
    s->pro = calloc((size_t)p, sizeof *s->pro);
    s->epi = calloc((size_t)p, sizeof *s->epi);
    s->npro = calloc((size_t)p, sizeof *s->npro);
    s->nepi = calloc((size_t)p, sizeof *s->nepi);
    if (!s->pro || !s->epi || !s->npro || !s->nepi) return -1;
    for (int st = 0; st < p; st++) {
        /* the live window before renumbering the slots: 1F1B's count */
        if (split_stage(s, st, micro, err, errlen) != 0) return -1;
        cyclic_slots(s, st, micro);
    }
    s->micro = micro;
    return 0;
}

/* ---- the tied wte ---------------------------------------------------------- */

static sched_instr tied(sched_op op, sched_msg_kind kind, int m, int peer)
{
    sched_instr in = optim();
    sched_msg msg = {kind, m, 0, peer};
    in.op = op;
    if (op == SI_SEND_TIED) in.send = msg;
    else in.recv = msg;
    return in;
}

/* Inserts `in` at position at of a list with spare room. */
static void insert(sched_instr *list, int *n, int at, sched_instr in)
{
    memmove(list + at + 1, list + at, sizeof *list * (size_t)(*n - at));
    list[at] = in;
    (*n)++;
}

int schedule_tie_2bw(schedule *s, char *err, size_t errlen)
{
    int p = s->stages, M = s->micro, last = p - 1;
    if (!s->pro || p < 2 || s->tied) {
        if (err && errlen) snprintf(err, errlen, "pipedream-2bw: tied wte needs a 2BW schedule over "
                                    "two stages or more, tied once");
        return -1;
    }
    s->tied = 1;
    /* Stage 0 owns wte. The prologue sends the version the batch after the
     * first will use (batch 2 of the frame); each steady step receives the
     * batch's gradient before OPTIM and sends V(b+2) after it; the epilogue
     * sends nothing (the next prologue does). */
    insert(s->pro[0], &s->npro[0], 0, tied(SI_SEND_TIED, MSG_TIED_WEIGHT, 2 * M, last));
    insert(s->ins[0], &s->n[0], s->n[0] - 1, tied(SI_RECV_TIED, MSG_TIED_GRAD, M, last));
    insert(s->ins[0], &s->n[0], s->n[0], tied(SI_SEND_TIED, MSG_TIED_WEIGHT, 3 * M, last));
    insert(s->epi[0], &s->nepi[0], s->nepi[0] - 1, tied(SI_RECV_TIED, MSG_TIED_GRAD, M, last));
    /* The last stage sends its gradient before OPTIM and, after it, receives
     * the version of the next batch (batch 2), before that batch's first forward. */
    sched_instr *lists[2] = {s->ins[last], s->epi[last]};
    int *ns[2] = {&s->n[last], &s->nepi[last]};
    for (int k = 0; k < 2; k++) {
        insert(lists[k], ns[k], *ns[k] - 1, tied(SI_SEND_TIED, MSG_TIED_GRAD, M, 0));
        insert(lists[k], ns[k], *ns[k], tied(SI_RECV_TIED, MSG_TIED_WEIGHT, 2 * M, 0));
    }
    return 0;
}

/* ---- unrolled: prologue + steady + steady + epilogue -------------------- */

int schedule_unroll_2bw(const schedule *s, schedule *out)
{
    int p = s->stages, M = s->micro;
    memset(out, 0, sizeof *out);
    out->kind = s->kind;
    out->stages = p;
    out->micro = 4 * M; /* batches 0..2, and the wte version of batch 3 */
    out->virt = s->virt;
    out->chunks = s->chunks;
    out->weight_delay = s->weight_delay;
    out->tied = s->tied;
    out->split = s->split;
    out->ins = calloc((size_t)p, sizeof *out->ins);
    out->n = calloc((size_t)p, sizeof *out->n);
    out->slots = calloc((size_t)p, sizeof *out->slots);
    out->bufs = calloc((size_t)p, sizeof *out->bufs);
    if (!out->ins || !out->n || !out->slots || !out->bufs) {
        schedule_free(out);
        return -1;
    }
    for (int st = 0; st < p; st++) {
        int n = s->npro[st] + 2 * s->n[st] + s->nepi[st], k = 0;
        sched_instr *l = malloc(sizeof *l * ((size_t)n + 1));
        if (!l) {
            schedule_free(out);
            return -1;
        }
        /* the frame's batch 1 is batch 0, 0, 1 and 2 of the unrolled run */
        for (int i = 0; i < s->npro[st]; i++) l[k++] = shifted(s->pro[st][i], -M);
        for (int i = 0; i < s->n[st]; i++) l[k++] = shifted(s->ins[st][i], -M);
        for (int i = 0; i < s->n[st]; i++) l[k++] = s->ins[st][i];
        for (int i = 0; i < s->nepi[st]; i++) l[k++] = shifted(s->epi[st][i], M);
        out->ins[st] = l;
        out->n[st] = k;
        out->slots[st] = s->slots[st];
        out->bufs[st] = s->bufs[st];
    }
    return 0;
}
