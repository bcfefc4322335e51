/* test_verify.c: hand-written instruction lists, correct and broken, through
 * the verifier; each broken one must be rejected with a message naming the
 * ranks, instruction indices and kinds. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "schedule.h"
#include "verify.h"

#include "check.h"

/* ---- building lists by hand ---- */

static sched_instr mk(sched_op op, int m, int c, int slot, int peer)
{
    sched_instr in;
    memset(&in, 0, sizeof in);
    in.op = op;
    in.m = m;
    in.chunk = c;
    in.slot = slot;
    in.peer = peer;
    in.group = -1;
    return in;
}
static sched_instr fwd(int m, int c, int slot) { return mk(SI_FWD, m, c, slot, -1); }
static sched_instr bwd(int m, int c, int slot) { return mk(SI_BWD, m, c, slot, -1); }
static sched_instr bin(int m, int c, int slot) { return mk(SI_BWD_INPUT, m, c, slot, -1); }
static sched_instr bw(int m, int c, int slot) { return mk(SI_BWD_WEIGHT, m, c, slot, -1); }
static sched_instr sa(int m, int c, int to) { return mk(SI_SEND_ACT, m, c, -1, to); }
static sched_instr ra(int m, int c, int from) { return mk(SI_RECV_ACT, m, c, -1, from); }
static sched_instr sg(int m, int c, int to) { return mk(SI_SEND_GRAD, m, c, -1, to); }
static sched_instr rg(int m, int c, int from) { return mk(SI_RECV_GRAD, m, c, -1, from); }
static sched_instr optim(void) { return mk(SI_OPTIM, 0, 0, -1, -1); }
static sched_instr sr(sched_msg send, sched_msg recv)
{
    sched_instr in = mk(SI_SENDRECV, 0, 0, -1, -1);
    in.send = send;
    in.recv = recv;
    return in;
}
static sched_msg act(int m, int c, int peer) { return (sched_msg){MSG_ACT, m, c, peer}; }
static sched_msg grad(int m, int c, int peer) { return (sched_msg){MSG_GRAD, m, c, peer}; }
static sched_instr coll(int group, const char *tag)
{
    sched_instr in = mk(SI_COLLECTIVE, 0, 0, -1, -1);
    in.group = group;
    snprintf(in.tag, sizeof in.tag, "%s", tag);
    return in;
}

#define RANK(id, list, nslots) {(id), (list), (int)(sizeof(list) / sizeof((list)[0])), (nslots)}

static char err[2048];

/* Runs the verifier; the case passes when the outcome is as expected and every
 * substring (NULL-terminated list) is in the message. */
static void expect(const char *name, const verify_input *in, int want_ok, ...)
{
    err[0] = 0;
    int rc = verify_run(in, err, sizeof err);
    int ok = want_ok ? rc == 0 : rc == -1;
    va_list ap;
    va_start(ap, want_ok);
    const char *missing = NULL;
    for (const char *sub; (sub = va_arg(ap, const char *)) != NULL;)
        if (!missing && !strstr(err, sub)) missing = sub;
    va_end(ap);
    if (missing) ok = 0;
    check(ok, "%s: %s%s%s%s", name, rc == 0 ? "passes" : "rejected: ", err,
          missing ? "  [missing: " : "", missing ? missing : "");
    if (missing) printf("       ^ expected \"%s\" in the message\n", missing);
}

/* A correct two-stage 1F1B with m = 2, written out by hand. */
static void correct_pipeline(void)
{
    const sched_instr good0[] = {
        fwd(0, 0, 0), sa(0, 1, 1), fwd(1, 0, 1), sr(act(1, 1, 1), grad(0, 0, 1)),
        bwd(0, 0, 0), rg(1, 0, 1), bwd(1, 0, 1), optim()};
    const sched_instr good1[] = {
        ra(0, 1, 0), fwd(0, 1, 0), bwd(0, 1, 0), sr(grad(0, 0, 0), act(1, 1, 0)),
        fwd(1, 1, 0), bwd(1, 1, 0), sg(1, 0, 0), optim()};
    verify_rank r[] = {RANK(0, good0, 2), RANK(1, good1, 1)};
    verify_input in = {r, 2, NULL, 0, 2, 0};
    expect("hand-written 2-stage 1F1B", &in, 1, NULL);

    verify_rank tight[] = {RANK(0, good0, 1), RANK(1, good1, 1)};
    verify_input in2 = {tight, 2, NULL, 0, 2, 0};
    expect("same lists, stage 0 reserving 1 slot instead of 2", &in2, 0, "rank 0 #2 FWD m1 c0",
           "buffer over-use", "2 live", "1 reserved", NULL);
}

static void swapped_sends(void)
{
    const sched_instr r0[] = {
        fwd(0, 0, 0), fwd(1, 0, 1), sa(1, 1, 1), sa(0, 1, 1),
        rg(0, 0, 1), bwd(0, 0, 0), rg(1, 0, 1), bwd(1, 0, 1), optim()};
    const sched_instr r1[] = {
        ra(0, 1, 0), fwd(0, 1, 0), ra(1, 1, 0), fwd(1, 1, 1),
        bwd(0, 1, 0), sg(0, 0, 0), bwd(1, 1, 1), sg(1, 0, 0), optim()};
    verify_rank r[] = {RANK(0, r0, 2), RANK(1, r1, 2)};
    verify_input in = {r, 2, NULL, 0, 2, 0};
    expect("swapped send order", &in, 0, "mismatched", "rank 0 #2 SEND_ACT m1 c1 to rank 1",
           "rank 1 #0 RECV_ACT m0 c1 from rank 0", "microbatch 1 vs 0", NULL);
}

static void missing_receive(void)
{
    /* rank 1 never receives m1: rank 0 waits at its send after rank 1 finished */
    const sched_instr r0[] = {
        fwd(0, 0, 0), sa(0, 1, 1), fwd(1, 0, 1), sa(1, 1, 1), optim()};
    const sched_instr r1[] = {ra(0, 1, 0), fwd(0, 1, 0), bwd(0, 1, 0), optim()};
    verify_rank r[] = {RANK(0, r0, 2), RANK(1, r1, 1)};
    verify_input in = {r, 2, NULL, 0, 0, 0}; /* chunks = 0: no data-dependency checks */
    expect("missing receive (unmatched send)", &in, 0, "unmatched",
           "rank 0 #3 SEND_ACT m1 c1 to rank 1", "rank 1 has finished", "receive", NULL);

    /* with the chunks known, the forward that lacks its input is caught */
    const sched_instr q0[] = {
        fwd(0, 0, 0), sa(0, 1, 1), fwd(1, 0, 1), sa(1, 1, 1),
        rg(0, 0, 1), bwd(0, 0, 0), rg(1, 0, 1), bwd(1, 0, 1), optim()};
    const sched_instr q1[] = {
        ra(0, 1, 0), fwd(0, 1, 0), fwd(1, 1, 1),
        bwd(0, 1, 0), sg(0, 0, 0), bwd(1, 1, 1), sg(1, 0, 0), optim()};
    verify_rank q[] = {RANK(0, q0, 2), RANK(1, q1, 2)};
    verify_input in2 = {q, 2, NULL, 0, 2, 0};
    expect("missing receive (forward without its input)", &in2, 0, "rank 1 #2 FWD m1 c1",
           "before its input activation arrived", "RECV_ACT m1 c1", NULL);

    /* a receive whose sender finished */
    const sched_instr s0[] = {fwd(0, 0, 0), bwd(0, 0, 0), optim()};
    const sched_instr s1[] = {rg(0, 0, 0), optim()};
    verify_rank s[] = {RANK(0, s0, 1), RANK(1, s1, 0)};
    verify_input in3 = {s, 2, NULL, 0, 0, 0};
    expect("receive with no send", &in3, 0, "unmatched", "rank 1 #0 RECV_GRAD m0 c0 from rank 0",
           "rank 0 has finished", "send", NULL);
}

static void collectives(void)
{
    static const int m01[] = {0, 1}, m12[] = {1, 2}, m012[] = {0, 1, 2};
    verify_group g[] = {{0, m01, 2}, {1, m12, 2}, {2, m012, 3}};

    const sched_instr a0[] = {coll(0, "grad.b0"), coll(2, "loss"), coll(0, "grad.b1"), optim()};
    const sched_instr a1[] = {coll(0, "grad.b0"), coll(1, "tp.x"), coll(2, "loss"),
                                     coll(0, "grad.b1"), optim()};
    const sched_instr a2[] = {coll(1, "tp.x"), coll(2, "loss"), optim()};
    verify_rank ra_[] = {RANK(0, a0, 0), RANK(1, a1, 0), RANK(2, a2, 0)};
    verify_input in = {ra_, 3, g, 3, 0, 0};
    expect("collectives of overlapping groups in a consistent order", &in, 1, NULL);

    const sched_instr b0[] = {coll(0, "grad.b0"), coll(0, "grad.b1"), optim()};
    const sched_instr b1[] = {coll(0, "grad.b1"), coll(0, "grad.b0"), optim()};
    verify_rank rb[] = {RANK(0, b0, 0), RANK(1, b1, 0)};
    verify_input in2 = {rb, 2, g, 1, 0, 0};
    expect("collective order differing inside a group", &in2, 0, "collective order differs",
           "group 0", "rank 0 #0 COLLECTIVE group 0 \"grad.b0\"",
           "rank 1 #0 COLLECTIVE group 0 \"grad.b1\"", NULL);

    /* rank 0 enters the collective before receiving; rank 1 sends first */
    const sched_instr c0[] = {coll(0, "sync"), ra(0, 1, 1), optim()};
    const sched_instr c1[] = {sa(0, 1, 0), coll(0, "sync"), optim()};
    verify_rank rc[] = {RANK(0, c0, 0), RANK(1, c1, 0)};
    verify_input in3 = {rc, 2, g, 1, 0, 0};
    expect("collective against a pending send", &in3, 0, "cycle",
           "rank 0 waits at #0 COLLECTIVE group 0 \"sync\" for rank 1",
           "rank 1 waits at #0 SEND_ACT m0 c1 to rank 0 for rank 0", NULL);

    const sched_instr d2[] = {coll(0, "grad.b0"), optim()};
    verify_rank rd[] = {RANK(0, b0, 0), RANK(1, b0, 0), RANK(2, d2, 0)};
    verify_input in4 = {rd, 3, g, 1, 0, 0};
    expect("collective on a rank outside the group", &in4, 0, "rank 2 #0 COLLECTIVE",
           "not a member of group 0", NULL);
}

static void backward_before_forward(void)
{
    const sched_instr r0[] = {bwd(0, 0, 0), fwd(0, 0, 0), optim()};
    verify_rank r[] = {RANK(0, r0, 1)};
    verify_input in = {r, 1, NULL, 0, 1, 0};
    expect("backward before forward", &in, 0, "rank 0 #0 BWD m0 c0", "backward before forward",
           NULL);

    const sched_instr w0[] = {fwd(0, 0, 0), bw(0, 0, 0), bin(0, 0, 0), optim()};
    verify_rank w[] = {RANK(0, w0, 1)};
    verify_input in2 = {w, 1, NULL, 0, 1, 0};
    expect("weight gradient before input gradient", &in2, 0, "rank 0 #1 BWD_WEIGHT m0 c0",
           "before its BWD_INPUT", NULL);

    const sched_instr x0[] = {fwd(0, 0, 0), bin(0, 0, 0), optim()};
    verify_rank x[] = {RANK(0, x0, 1)};
    verify_input in3 = {x, 1, NULL, 0, 1, 0};
    expect("input gradient without weight gradient", &in3, 0, "rank 0", "m0 c0",
           "BWD_INPUT but no BWD_WEIGHT", NULL);

    const sched_instr ok0[] = {fwd(0, 0, 0), fwd(1, 0, 1), bin(1, 0, 1), bin(0, 0, 0),
                                      bw(0, 0, 0), bw(1, 0, 1), optim()};
    verify_rank okr[] = {RANK(0, ok0, 2)};
    verify_input in4 = {okr, 1, NULL, 0, 1, 0};
    expect("split backward in a valid order", &in4, 1, NULL);
}

static void buffer_overuse(void)
{
    const sched_instr r0[] = {fwd(0, 0, 0), fwd(1, 0, 1), bwd(0, 0, 0), bwd(1, 0, 1), optim()};
    verify_rank r[] = {RANK(0, r0, 1)};
    verify_input in = {r, 1, NULL, 0, 1, 0};
    expect("more live activations than reserved slots", &in, 0, "rank 0 #1 FWD m1 c0 slot 1",
           "buffer over-use", "2 live", "1 reserved", NULL);

    const sched_instr q0[] = {fwd(0, 0, 0), fwd(1, 0, 0), bwd(0, 0, 0), bwd(1, 0, 0), optim()};
    verify_rank q[] = {RANK(0, q0, 2)};
    verify_input in2 = {q, 1, NULL, 0, 1, 0};
    expect("slot reused while live", &in2, 0, "rank 0 #1 FWD m1 c0 slot 0", "reused while live",
           "m0 c0 from FWD #0", NULL);

    const sched_instr s0[] = {fwd(0, 0, 0), fwd(1, 0, 1), bwd(0, 0, 1), bwd(1, 0, 0), optim()};
    verify_rank s[] = {RANK(0, s0, 2)};
    verify_input in3 = {s, 1, NULL, 0, 1, 0};
    expect("backward naming the wrong slot", &in3, 0, "rank 0 #2 BWD m0 c0 slot 1",
           "holds m1 c0", NULL);

    const sched_instr t0[] = {fwd(0, 0, 0), optim()};
    verify_rank t[] = {RANK(0, t0, 1)};
    verify_input in4 = {t, 1, NULL, 0, 1, 0};
    expect("activation never released", &in4, 0, "rank 0", "m0 c0", "never released", NULL);
}

static void wait_cycles(void)
{
    const sched_instr r0[] = {rg(0, 0, 1), fwd(0, 0, 0), optim()};
    const sched_instr r1[] = {ra(0, 1, 0), fwd(0, 1, 0), optim()};
    verify_rank r[] = {RANK(0, r0, 1), RANK(1, r1, 1)};
    verify_input in = {r, 2, NULL, 0, 0, 0};
    expect("two ranks each receiving first from the other", &in, 0, "deadlock", "cycle",
           "rank 0 waits at #0 RECV_GRAD m0 c0 from rank 1 for rank 1",
           "rank 1 waits at #0 RECV_ACT m0 c1 from rank 0 for rank 0", NULL);

    const sched_instr t0[] = {ra(0, 0, 2), optim()};
    const sched_instr t1[] = {ra(0, 1, 0), optim()};
    const sched_instr t2[] = {ra(0, 2, 1), optim()};
    verify_rank t[] = {RANK(0, t0, 0), RANK(1, t1, 0), RANK(2, t2, 0)};
    verify_input in2 = {t, 3, NULL, 0, 0, 0};
    expect("three-rank ring of receives", &in2, 0, "cycle", "rank 0 waits at #0",
           "rank 2 waits at #0 RECV_ACT m0 c2 from rank 1 for rank 1", "back to rank 0", NULL);

    /* 1F1B steady state with plain sends: both neighbours send first */
    const sched_instr p0[] = {
        fwd(0, 0, 0), sa(0, 1, 1), fwd(1, 0, 1), sa(1, 1, 1), rg(0, 0, 1),
        bwd(0, 0, 0), rg(1, 0, 1), bwd(1, 0, 1), optim()};
    const sched_instr p1[] = {
        ra(0, 1, 0), fwd(0, 1, 0), bwd(0, 1, 0), sg(0, 0, 0), ra(1, 1, 0),
        fwd(1, 1, 0), bwd(1, 1, 0), sg(1, 0, 0), optim()};
    verify_rank p[] = {RANK(0, p0, 2), RANK(1, p1, 1)};
    verify_input in3 = {p, 2, NULL, 0, 2, 0};
    expect("1F1B with plain rendezvous sends on both sides", &in3, 0, "cycle",
           "rank 0 waits at #3 SEND_ACT m1 c1 to rank 1",
           "rank 1 waits at #3 SEND_GRAD m0 c0 to rank 0", NULL);
    /* the same exchange as SENDRECV on both sides passes */
    const sched_instr f0[] = {
        fwd(0, 0, 0), sa(0, 1, 1), fwd(1, 0, 1), sr(act(1, 1, 1), grad(0, 0, 1)),
        bwd(0, 0, 0), rg(1, 0, 1), bwd(1, 0, 1), optim()};
    const sched_instr f1[] = {
        ra(0, 1, 0), fwd(0, 1, 0), bwd(0, 1, 0), sr(grad(0, 0, 0), act(1, 1, 0)),
        fwd(1, 1, 0), bwd(1, 1, 0), sg(1, 0, 0), optim()};
    verify_rank f[] = {RANK(0, f0, 2), RANK(1, f1, 1)};
    verify_input in4 = {f, 2, NULL, 0, 2, 0};
    expect("the same exchange fused into SENDRECV", &in4, 1, NULL);
}

static void other_errors(void)
{
    const sched_instr r0[] = {fwd(0, 0, 0), sa(0, 1, 5), bwd(0, 0, 0), optim()};
    verify_rank r[] = {RANK(0, r0, 1)};
    verify_input in = {r, 1, NULL, 0, 0, 0};
    expect("send to a rank that does not exist", &in, 0, "rank 0 #1 SEND_ACT m0 c1 to rank 5",
           "not a rank", NULL);

    const sched_instr d0[] = {fwd(0, 0, 0), fwd(0, 0, 1), bwd(0, 0, 0), optim()};
    verify_rank d[] = {RANK(0, d0, 2)};
    verify_input in2 = {d, 1, NULL, 0, 1, 0};
    expect("forward run twice", &in2, 0, "rank 0 #1 FWD m0 c0", "runs twice", "#0", NULL);

    const sched_instr e0[] = {sa(0, 1, 1), fwd(0, 0, 0), bwd(0, 0, 0), optim()};
    const sched_instr e1[] = {ra(0, 1, 0), optim()};
    verify_rank e[] = {RANK(0, e0, 1), RANK(1, e1, 0)};
    verify_input in3 = {e, 2, NULL, 0, 2, 0};
    expect("activation sent before it is computed", &in3, 0, "rank 0 #0 SEND_ACT m0 c1",
           "before FWD m0 c0 produced it", NULL);
}

/* Copies a built schedule's lists so a test can break them. */
typedef struct {
    sched_instr *ins[16];
    verify_rank r[16];
    verify_input in;
} editable;

static void edit_copy(editable *e, const schedule *s)
{
    for (int st = 0; st < s->stages; st++) {
        e->ins[st] = malloc(sizeof(sched_instr) * ((size_t)s->n[st] + 1));
        memcpy(e->ins[st], s->ins[st], sizeof(sched_instr) * (size_t)s->n[st]);
        e->r[st] = (verify_rank){st, e->ins[st], s->n[st], s->slots[st]};
    }
    e->in = (verify_input){e->r, s->stages, NULL, 0, s->chunks, 0};
}

static void edit_free(editable *e, const schedule *s)
{
    for (int st = 0; st < s->stages; st++) free(e->ins[st]);
}

/* SENDRECV at i becomes a plain send followed by a plain receive. */
static void unfuse(editable *e, int st, int i)
{
    sched_instr x = e->ins[st][i], snd, rcv;
    memset(&snd, 0, sizeof snd);
    snd.op = x.send.kind == MSG_ACT ? SI_SEND_ACT : SI_SEND_GRAD;
    snd.m = x.send.m;
    snd.chunk = x.send.chunk;
    snd.peer = x.send.peer;
    snd.slot = snd.group = -1;
    rcv = snd;
    rcv.op = x.recv.kind == MSG_ACT ? SI_RECV_ACT : SI_RECV_GRAD;
    rcv.m = x.recv.m;
    rcv.chunk = x.recv.chunk;
    rcv.peer = x.recv.peer;
    memmove(&e->ins[st][i + 2], &e->ins[st][i + 1], sizeof(sched_instr) * (size_t)(e->r[st].n - i - 1));
    e->ins[st][i] = snd;
    e->ins[st][i + 1] = rcv;
    e->r[st].n++;
}

static int find_op(const editable *e, int st, sched_op op)
{
    for (int i = 0; i < e->r[st].n; i++)
        if (e->ins[st][i].op == op) return i;
    return -1;
}

static void built_schedules(void)
{
    char name[128];
    schedule s;
    for (int k = 0; k < SCHED__COUNT; k++) {
        int v = k == SCHED_INTERLEAVED ? 2 : 1;
        if (schedule_build(&s, (sched_kind)k, 4, 8, v, err, sizeof err) != 0) {
            check(0, "build %s: %s", sched_name((sched_kind)k), err);
            continue;
        }
        if (s.pro) { /* 2BW: the lists as they run, prologue + steady + steady + epilogue */
            schedule u;
            if (schedule_unroll_2bw(&s, &u) != 0) {
                check(0, "unroll 2bw");
                schedule_free(&s);
                continue;
            }
            schedule_free(&s);
            s = u;
        }
        snprintf(name, sizeof name, "built %s p=4 m=8", sched_name((sched_kind)k));
        editable e;
        edit_copy(&e, &s);
        expect(name, &e.in, 1, NULL);

        /* drop stage 2's first receive */
        int i = find_op(&e, 2, SI_RECV_ACT);
        if (i >= 0) {
            memmove(&e.ins[2][i], &e.ins[2][i + 1], sizeof(sched_instr) * (size_t)(e.r[2].n - i - 1));
            e.r[2].n--;
        }
        snprintf(name, sizeof name, "built %s with stage 2's #%d RECV_ACT removed",
                 sched_name((sched_kind)k), i);
        expect(name, &e.in, 0, "rank 2", NULL);
        edit_free(&e, &s);

        /* one slot fewer on stage 0 */
        edit_copy(&e, &s);
        e.r[0].slots--;
        snprintf(name, sizeof name, "built %s with stage 0 reserving %d slots instead of %d",
                 sched_name((sched_kind)k), e.r[0].slots, s.slots[0]);
        expect(name, &e.in, 0, "rank 0", "FWD", "reserved", NULL);
        edit_free(&e, &s);

        /* stage 2 takes its first two activations in the wrong microbatch order */
        edit_copy(&e, &s);
        int *mb[2], found = 0;
        for (int j = 0; j < e.r[2].n && found < 2; j++) {
            sched_instr *x = &e.ins[2][j];
            if (x->op == SI_RECV_ACT) mb[found++] = &x->m;
            else if (x->op == SI_SENDRECV && x->recv.kind == MSG_ACT) mb[found++] = &x->recv.m;
        }
        if (found == 2) {
            int t = *mb[0];
            *mb[0] = *mb[1];
            *mb[1] = t;
        }
        snprintf(name, sizeof name, "built %s with stage 2's first two activation receives swapped",
                 sched_name((sched_kind)k));
        expect(name, &e.in, 0, "mismatched", "rank 2", "RECV_ACT m1", "rank 1", NULL);
        edit_free(&e, &s);

        /* split a SENDRECV pair between stages 2 and 3 into send-then-receive */
        edit_copy(&e, &s);
        int i2 = -1, i3 = -1;
        for (int j = 0; j < e.r[2].n && i2 < 0; j++)
            if (e.ins[2][j].op == SI_SENDRECV && e.ins[2][j].send.peer == 3 &&
                e.ins[2][j].recv.peer == 3)
                i2 = j;
        for (int j = 0; i2 >= 0 && j < e.r[3].n && i3 < 0; j++)
            if (e.ins[3][j].op == SI_SENDRECV && e.ins[3][j].send.peer == 2 &&
                e.ins[3][j].recv.peer == 2 && e.ins[3][j].send.m == e.ins[2][i2].recv.m &&
                e.ins[3][j].send.kind == e.ins[2][i2].recv.kind)
                i3 = j;
        if (i2 >= 0 && i3 >= 0) {
            unfuse(&e, 2, i2);
            unfuse(&e, 3, i3);
            snprintf(name, sizeof name, "built %s with stage 2's #%d and stage 3's #%d SENDRECV "
                     "split into send, receive", sched_name((sched_kind)k), i2, i3);
            expect(name, &e.in, 0, "deadlock", "cycle", "rank 2 waits at", "rank 3 waits at", NULL);
        } else if (k == SCHED_1F1B) {
            check(0, "built 1f1b has a SENDRECV pair between stages 2 and 3 to split");
        } else {
            printf("     (built %s: no SENDRECV pair between stages 2 and 3 to split)\n",
                   sched_name((sched_kind)k));
        }
        edit_free(&e, &s);
        schedule_free(&s);
    }
}

/* PipeDream-2BW's tied wte: non-blocking sends into the receiver's mailbox,
 * matched in the order they were posted; none may be left unreceived. */
static sched_instr tied_send(sched_msg_kind kind, int m, int to)
{
    sched_instr in = mk(SI_SEND_TIED, 0, 0, -1, -1);
    in.send = (sched_msg){kind, m, 0, to};
    return in;
}
static sched_instr tied_recv(sched_msg_kind kind, int m, int from)
{
    sched_instr in = mk(SI_RECV_TIED, 0, 0, -1, -1);
    in.recv = (sched_msg){kind, m, 0, from};
    return in;
}

static void tied_messages(void)
{
    /* the sender does not wait: both ranks may send first */
    const sched_instr a0[] = {tied_send(MSG_TIED_WEIGHT, 0, 1), tied_recv(MSG_TIED_GRAD, 0, 1), optim()};
    const sched_instr a1[] = {tied_send(MSG_TIED_GRAD, 0, 0), tied_recv(MSG_TIED_WEIGHT, 0, 0), optim()};
    verify_rank a[] = {RANK(0, a0, 0), RANK(1, a1, 0)};
    verify_input ina = {a, 2, NULL, 0, 0, 0};
    expect("tied wte exchange, both sending first", &ina, 1, NULL);

    const sched_instr b0[] = {tied_send(MSG_TIED_WEIGHT, 0, 1), tied_send(MSG_TIED_WEIGHT, 4, 1), optim()};
    const sched_instr b1[] = {tied_recv(MSG_TIED_WEIGHT, 0, 0), optim()};
    verify_rank b[] = {RANK(0, b0, 0), RANK(1, b1, 0)};
    verify_input inb = {b, 2, NULL, 0, 0, 0};
    expect("tied send never received", &inb, 0, "unmatched", "SEND_TIED wte weights of batch m4",
           "never received", NULL);

    const sched_instr c1[] = {tied_recv(MSG_TIED_WEIGHT, 4, 0), tied_recv(MSG_TIED_WEIGHT, 0, 0), optim()};
    const sched_instr c0[] = {tied_send(MSG_TIED_WEIGHT, 0, 1), tied_send(MSG_TIED_WEIGHT, 4, 1), optim()};
    verify_rank c[] = {RANK(0, c0, 0), RANK(1, c1, 0)};
    verify_input inc = {c, 2, NULL, 0, 0, 0};
    expect("tied receives out of posting order", &inc, 0, "rank 1 #0 RECV_TIED", "batch m0",
           "in order", NULL);

    const sched_instr d0[] = {tied_recv(MSG_TIED_GRAD, 0, 1), optim()};
    const sched_instr d1[] = {tied_recv(MSG_TIED_WEIGHT, 0, 0), optim()};
    verify_rank d[] = {RANK(0, d0, 0), RANK(1, d1, 0)};
    verify_input ind = {d, 2, NULL, 0, 0, 0};
    expect("tied receives waiting on each other", &ind, 0, "deadlock", "rank 0 waits at #0 RECV_TIED",
           NULL);

    /* a built 2BW schedule: drop the prologue's wte send and the last stage waits forever */
    schedule s;
    char e[512];
    if (schedule_build(&s, SCHED_2BW, 3, 4, 1, e, sizeof e) == 0 && schedule_tie_2bw(&s, e, sizeof e) == 0) {
        err[0] = 0;
        int ok = schedule_verify(&s, err, sizeof err) == 0;
        memmove(s.pro[0], s.pro[0] + 1, sizeof(sched_instr) * (size_t)(s.npro[0] - 1));
        s.npro[0]--;
        err[0] = 0;
        int rc = schedule_verify(&s, err, sizeof err);
        check(ok && rc == -1 && strstr(err, "RECV_TIED wte weights") && strstr(err, "rank 2"),
              "2bw p=3 m=4 without the prologue's wte send: rejected: %s", err);
        schedule_free(&s);
    } else {
        check(0, "build 2bw p=3 m=4: %s", e);
    }
}

/* schedule_verify's memo of schedules that passed: a schedule edited in
 * place after it passed is verified again (and fails), even when the edit
 * keeps its length; the unedited bytes pass again. */
static void verified_memo(void)
{
    schedule s;
    char e[512];
    if (schedule_build(&s, SCHED_1F1B, 4, 8, 1, e, sizeof e) != 0) {
        check(0, "build 1f1b p=4 m=8: %s", e);
        return;
    }
    err[0] = 0;
    int first = schedule_verify(&s, err, sizeof err), again = schedule_verify(&s, err, sizeof err);
    check(first == 0 && again == 0, "1f1b p=4 m=8 passes, and again (from the memo)");
    /* stage 1's first RECV_ACT now names a microbatch stage 0 never sends
     * first: same length, one field changed */
    int i = 0;
    while (i < s.n[1] && s.ins[1][i].op != SI_RECV_ACT) i++;
    if (i == s.n[1]) {
        check(0, "1f1b p=4 m=8: stage 1 has a RECV_ACT");
        schedule_free(&s);
        return;
    }
    int m = s.ins[1][i].m;
    s.ins[1][i].m = m + 1;
    err[0] = 0;
    int edited = schedule_verify(&s, err, sizeof err);
    check(edited == -1 && strstr(err, "rank 1"), "the same schedule with one receive's microbatch changed "
          "after it passed: verified again and rejected: %s", err);
    s.ins[1][i].m = m;
    check(schedule_verify(&s, err, sizeof err) == 0, "restored: passes");
    schedule_free(&s);
}

int main(void)
{
    correct_pipeline();
    swapped_sends();
    missing_receive();
    collectives();
    backward_before_forward();
    buffer_overuse();
    wait_cycles();
    other_errors();
    built_schedules();
    tied_messages();
    verified_memo();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
