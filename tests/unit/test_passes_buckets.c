/* test_passes_buckets.c: the buckets pass (compiler/passes.c) and the ZeRO
 * plan (compiler/zero_plan.c).  Buckets: gradients laid out in the order
 * backward completes them, each parameter exactly once, buckets within
 * buckets.mb (counted in the plan's gradient bytes) unless one parameter is
 * larger, the tied wte alone under ZeRO with pp > 1, and from ZeRO-2 on no
 * bucket across two chunks (under zb-h1 too, where the chunked head's bucket
 * lives through its chunk when a B can run before a W).  ZeRO over dp > 1:
 * each bucket padded with fewer than dp floats after its parameters so that
 * dp divides it (none otherwise); the compact shard of each bucket is
 * numel / dp, buffers (ZeRO >= 2) and gathers (ZeRO-3) live at the
 * same time never share a float, and every use of a parameter lies inside a
 * gather of its bucket. */
#include <stdlib.h>

#include "passes_fixture.h"

static void bucket_facts(const Program *p, const char *what) {
    int bad = 0;
    /* gradients complete after the backward of the earliest forward op using them */
    for (int k = 0; k < p->n_params; k++) {
        int first = -1;
        for (int i = 0; i < p->n_ops && first < 0; i++)
            for (int j = 0; j < p->ops[i].n_param; j++)
                if (p->ops[i].param[j] == k) first = i;
        bad += p->params[k].last_grad_op != p->n_ops - 1 - first;
    }
    for (int r = 1; r < p->n_params; r++)
        bad += p->params[p->grad_order[r - 1]].last_grad_op > p->params[p->grad_order[r]].last_grad_op;
    check(bad == 0, "%s: grad_order is backward completion order", what);
    /* layout: per stage, offsets are prefix sums in grad_order */
    bad = 0;
    for (int s = 0; s < p->pp; s++) {
        long off = 0;
        int prev = -1;
        for (int r = 0; r < p->n_params; r++) {
            const ir_param *q = &p->params[p->grad_order[r]];
            if (q->stage != s) continue;
            if (q->bucket != prev && prev >= 0) off += p->buckets[prev].pad;  /* the bucket before ends in its padding */
            prev = q->bucket;
            bad += q->offset != off;
            off += q->numel;
        }
        if (prev >= 0) off += p->buckets[prev].pad;
        bad += off != p->param_numel[s];
    }
    check(bad == 0, "%s: each stage's gradients laid out back to back in completion order (each bucket's padding "
          "after its last), filling its arena", what);
    /* buckets: contiguous per stage, each parameter inside its own */
    bad = 0;
    double el = strcmp(p->precision, "fp32") == 0 ? 4 : 2, cap = p->bucket_mb * 1048576.0;
    long end[64] = { 0 };
    int oversize = 0;
    for (int b = 0; b < p->n_buckets; b++) {
        const ir_bucket *bk = &p->buckets[b];
        bad += bk->offset != end[bk->stage];
        end[bk->stage] = bk->offset + bk->numel;
        long sum = 0;
        for (int r = bk->first_param; r <= bk->last_param; r++) {
            const ir_param *q = &p->params[p->grad_order[r]];
            if (q->stage != bk->stage) continue;
            sum += q->numel;
            bad += q->bucket != b || q->offset < bk->offset || q->offset + q->numel > bk->offset + bk->numel;
        }
        bad += sum + bk->pad != bk->numel;
        bad += bk->ready_after_op != p->params[p->grad_order[bk->last_param]].last_grad_op;
        if (b && p->buckets[b - 1].stage == bk->stage) bad += bk->ready_after_op < p->buckets[b - 1].ready_after_op;
        if (el * (double)(bk->numel - bk->pad) > cap) oversize += bk->first_param != bk->last_param;
    }
    for (int s = 0; s < p->pp; s++) bad += end[s] != p->param_numel[s];
    check(bad == 0, "%s: %d buckets cover each stage's arena in order, every parameter in exactly one, ready in "
          "completion order", what, p->n_buckets);
    /* padding: under ZeRO over dp > 1 the fewest zeros that make dp divide
     * each bucket, none otherwise */
    bad = 0;
    for (int b = 0; b < p->n_buckets; b++) {
        const ir_bucket *bk = &p->buckets[b];
        if (p->zero && p->dp > 1) bad += bk->numel % p->dp != 0 || bk->pad < 0 || bk->pad >= p->dp;
        else bad += bk->pad != 0;
    }
    check(bad == 0, "%s: every bucket padded to a multiple of dp %d under ZeRO with fewer than dp floats, unpadded "
          "otherwise", what, p->dp);
    check(oversize == 0, "%s: every bucket of more than one parameter within buckets.mb = %g MiB of %g-byte gradients",
          what, p->bucket_mb, el);
    /* and as full as the cap allows: the next parameter would not have fit
     * (where no other rule cuts: the tied wte under ZeRO with pp > 1, chunks
     * from ZeRO-2 on) */
    if (p->zero >= 2 || (p->zero > 0 && p->pp > 1)) return;
    int early = 0;
    for (int b = 0; b + 1 < p->n_buckets; b++) {
        const ir_bucket *bk = &p->buckets[b], *nx = &p->buckets[b + 1];
        if (nx->stage != bk->stage) continue;
        early += el * (double)(bk->numel - bk->pad + p->params[p->grad_order[nx->first_param]].numel) <= cap;
    }
    check(early == 0, "%s: no bucket is cut before the cap (%d are)", what, early);
}

static void zero_facts(const Program *p, const char *what) {
    long shard[64] = { 0 };
    for (int b = 0; b < p->n_buckets; b++) shard[p->buckets[b].stage] += p->buckets[b].numel / p->dp;
    int bad = 0;
    for (int s = 0; s < p->pp; s++) bad += shard[s] != p->shard_numel[s];
    check(bad == 0, "%s: the compact shard is numel / dp of each bucket (stage 0: %ld floats)", what, shard[0]);
    if (p->zero < 2) return;
    bad = 0;
    for (int a = 0; a < p->n_buckets; a++) {
        const ir_bucket *x = &p->buckets[a];
        bad += !(x->first_write_op <= x->ready_after_op && x->ready_after_op <= x->wait_after_op);
        bad += x->buffer < 0 || x->buffer + x->numel > p->grad_buf_numel[x->stage];
        for (int b = a + 1; b < p->n_buckets; b++) {
            const ir_bucket *y = &p->buckets[b];
            /* one started and waited in B (zero-bubble) is never live with
             * one W writes and waits for: B and W calls never run at once */
            int live = x->stage == y->stage && x->start_in_b == y->start_in_b &&
                       x->first_write_op <= y->wait_after_op && y->first_write_op <= x->wait_after_op;
            bad += live && x->buffer < y->buffer + y->numel && y->buffer < x->buffer + x->numel;
        }
    }
    check(bad == 0, "%s: bucket buffers live from first write through ready to wait, within the arena, never "
          "sharing a float while live together", what);
    if (p->zero < 3) return;
    bad = 0;
    for (int e = 0; e < p->n_gathers; e++) {
        const zero_gather *g = &p->gathers[e];
        const ir_bucket *x = &p->buckets[g->bucket];
        bad += !(g->issue <= g->start && g->start <= g->end);
        bad += x->gather < 0 || x->gather + x->numel > p->gather_numel[g->stage];
        for (int f = e + 1; f < p->n_gathers; f++) {
            const zero_gather *h = &p->gathers[f];
            const ir_bucket *y = &p->buckets[h->bucket];
            int live = g->stage == h->stage && g->bucket != h->bucket && g->issue <= h->end && h->issue <= g->end;
            bad += live && x->gather < y->gather + y->numel && y->gather < x->gather + x->numel;
        }
    }
    /* every forward use of a parameter (time i) inside a gather of its bucket */
    int uncovered = 0;
    for (int i = 0; i < p->n_ops; i++)
        for (int j = 0; j < p->ops[i].n_param; j++) {
            int b = p->params[p->ops[i].param[j]].bucket, in = 0;
            for (int e = 0; e < p->n_gathers; e++)
                in |= p->gathers[e].bucket == b && p->gathers[e].start <= i && i <= p->gathers[e].end;
            uncovered += !in;
        }
    check(bad == 0 && uncovered == 0 && p->n_gathers > 0, "%s: %d gathers, issued before use, disjoint while live, "
          "covering every forward use (%d uncovered)", what, p->n_gathers, uncovered);
}

/* Whether bucket b's buffer shares a float with another bucket's of its stage. */
static int shares_floats(const Program *p, int b) {
    const ir_bucket *x = &p->buckets[b];
    int n = 0;
    for (int c = 0; c < p->n_buckets; c++) {
        const ir_bucket *y = &p->buckets[c];
        n += c != b && y->stage == x->stage && x->buffer < y->buffer + y->numel && y->buffer < x->buffer + x->numel;
    }
    return n;
}

/* Moves, on the last stage, W of microbatch 0 to just after B of
 * microbatch 1 (zb-h1 runs W0 first there) and plans the zero pass again. */
static int b1_before_w0(Program *p) {
    int last = p->pp - 1, k = p->n_chunks - 1;
    sched_instr *ins = p->sched->ins[last];
    int w0 = -1, b1 = -1;
    for (int i = 0; i < p->sched->n[last]; i++) {
        if (ins[i].op == SI_BWD_WEIGHT && ins[i].m == 0 && ins[i].chunk == k) w0 = i;
        if (ins[i].op == SI_BWD_INPUT && ins[i].m == 1 && ins[i].chunk == k) b1 = i;
    }
    check(w0 >= 0 && b1 > w0, "zb-h1's last stage runs W0 before B1");
    if (w0 < 0 || b1 <= w0) return -1;
    sched_instr w = ins[w0];
    memmove(&ins[w0], &ins[w0 + 1], sizeof *ins * (size_t)(b1 - w0));
    ins[b1] = w;
    free(p->shard_numel);
    free(p->grad_buf_numel);
    free(p->gather_numel);
    int rc = pass_zero(p);
    check(rc == 0, "the zero pass plans the list with B1 before W0");
    return rc;
}

/* The bucket of the LM head's weight (its op's parameter). */
static int head_bucket(const Program *p) {
    for (int i = 0; i < p->n_ops; i++)
        if (p->ops[i].kind == OP_LMHEAD_XENT) return p->params[p->ops[i].param[0]].bucket;
    return -1;
}

/* ZeRO-2 under zb-h1: the chunked LM head writes its weight gradient in its
 * B half.  Alone in its bucket (the tied wte's copy), B writes the bucket
 * whole, so B starts its reduce-scatter and waits for it at its end
 * (start_in_b): its buffer lives inside one B call, so it shares floats
 * with buckets W writes, wherever the list puts the other microbatches' B
 * and W halves.  Beside gradients from W (LLaMA's untied lm_head with the
 * final norm, staged for W) the bucket starts in W; zb-h1 runs the last
 * stage's W right after its B, but a list with another microbatch's B
 * before a W (moved here by hand) makes it take gradients between W calls:
 * live through the whole chunk, sharing no float of the stage. */
static void head_bucket_under_zb(void) {
    Program p;
    int rc = compile_with(&p, "plans/tiny.lua", "cpu", "zero=2", "mesh.pp=2", "pipeline.schedule=zb-h1",
                          "batch.micro=2", "buckets.mb=0.02", NULL);
    check(rc == 0, "zero 2 pp 2 zb-h1 (0.02 MiB) compiles");
    if (rc != 0) return;
    int k = p.n_chunks - 1, head = head_bucket(&p), chunk_end = p.n_ops - 1 - p.chunk_first_op[k];
    for (int pass = 0; pass < 2 && head >= 0; pass++) {
        const char *what = pass ? "B1 before W0" : "zb-h1 as built";
        const ir_bucket *bk = &p.buckets[head];
        int alone_in_b = 0;
        for (int b = 0; b < p.n_buckets; b++) alone_in_b += p.buckets[b].start_in_b;
        check(bk->start_in_b && alone_in_b == 1 && bk->ready_after_op == 0 && bk->wait_after_op == chunk_end,
              "%s: the tied head's bucket (alone) starts in B after the head's B (op %d) and is waited at B's end "
              "(op %d of %d), the only bucket started in B (%d)", what, bk->ready_after_op, bk->wait_after_op,
              chunk_end, alone_in_b);
        check(shares_floats(&p, head) > 0, "%s: the head's bucket buffer is reused by buckets W writes (%d share)",
              what, shares_floats(&p, head));
        zero_facts(&p, what);
        if (pass == 0 && b1_before_w0(&p) != 0) break;
    }
    program_free(&p);

    rc = compile_with(&p, "plans/llama_tiny.lua", "cpu", "zero=2", "mesh.pp=2", "pipeline.schedule=zb-h1",
                      "batch.micro=2", "buckets.mb=0.1", NULL);
    check(rc == 0, "llama zero 2 pp 2 zb-h1 (0.1 MiB) compiles");
    if (rc != 0) return;
    k = p.n_chunks - 1, head = head_bucket(&p);
    check(head >= 0 && !p.buckets[head].start_in_b && p.buckets[head].first_param != p.buckets[head].last_param,
          "llama: lm_head shares its bucket with gradients W adds in: it starts in W");
    if (head >= 0 && b1_before_w0(&p) == 0) {
        const ir_bucket *bk = &p.buckets[head];
        check(bk->first_write_op == p.n_ops - p.chunk_end_op[k] && bk->wait_after_op == p.n_ops - 1 - p.chunk_first_op[k]
              && shares_floats(&p, head) == 0, "llama, B1 before W0: the head's bucket lives through the chunk's "
              "backward (%d..%d) and shares no float of its stage", bk->first_write_op, bk->wait_after_op);
        zero_facts(&p, "llama, B1 before W0");
    }
    program_free(&p);
}

int main(void) {
    Program p;
    struct { const char *what, *sets[6]; } plans[] = {
        { "tiny (0.5 MiB)", { NULL } },
        { "one per parameter (mb 0)", { "buckets.mb=0", NULL } },
        { "bf16 0.1 MiB", { "precision=bf16", "buckets.mb=0.1", NULL } },
        { "pp 2 zero 1", { "mesh.pp=2", "zero=1", "batch.micro=2", NULL } },
        { "zero 2 mb 0", { "zero=2", "buckets.mb=0", NULL } },
        { "zero 2 pp 2 interleaved", { "zero=2", "mesh.pp=2", "pipeline.schedule=interleaved", "pipeline.virtual=2",
                                       "batch.micro=2", NULL } },
        { "zero 2 pp 2 zb-h1", { "zero=2", "mesh.pp=2", "pipeline.schedule=zb-h1", "batch.micro=2",
                                 "buckets.mb=0.05", NULL } },
        { "zero 3 mb 0.02", { "zero=3", "buckets.mb=0.02", NULL } },
        { "zero 3 pp 2", { "zero=3", "mesh.pp=2", "batch.micro=2", "buckets.mb=0.05", NULL } },
        /* dp 3 divides none of tiny's 64-float vectors: padded buckets */
        { "dp 3 zero 1", { "mesh.dp=3", "zero=1", "batch.global=24", "batch.micro=8", "buckets.mb=0.05", NULL } },
        { "dp 3 zero 2 mb 0", { "mesh.dp=3", "zero=2", "batch.global=24", "batch.micro=8", "buckets.mb=0", NULL } },
        { "dp 3 zero 3 pp 2", { "mesh.dp=3", "zero=3", "mesh.pp=2", "batch.global=24", "batch.micro=4", NULL } },
        { "dp 3 no zero", { "mesh.dp=3", "batch.global=24", "batch.micro=8", "buckets.mb=0.05", NULL } },
    };
    for (size_t c = 0; c < sizeof plans / sizeof *plans; c++) {
        const char *const *s = plans[c].sets;
        int n = 0;
        while (s[n]) n++;
        int rc = compile_with(&p, "plans/tiny.lua", "cpu", n > 0 ? s[0] : NULL, n > 1 ? s[1] : NULL, n > 2 ? s[2] : NULL,
                              n > 3 ? s[3] : NULL, n > 4 ? s[4] : NULL, NULL);
        check(rc == 0, "%s compiles", plans[c].what);
        if (rc != 0) continue;
        bucket_facts(&p, plans[c].what);
        zero_facts(&p, plans[c].what);
        if (p.dp == 3 && p.zero) {
            long pads = 0;
            for (int b = 0; b < p.n_buckets; b++) pads += p.buckets[b].pad;
            check(pads > 0, "%s: some buckets padded (%ld floats)", plans[c].what, pads);
        }
        if (p.bucket_mb == 0) check(p.n_buckets == p.n_params, "%s: one bucket per parameter (%d)", plans[c].what, p.n_buckets);
        if (p.zero > 0 && p.pp > 1) {
            int bad = 0;
            for (int k = 0; k < p.n_params; k++)
                if (p.params[k].tied_to >= 0 || k == param_named(&p, "wte.weight")) {
                    const ir_bucket *bk = &p.buckets[p.params[k].bucket];
                    bad += bk->first_param != bk->last_param;
                }
            check(bad == 0, "%s: the tied wte and its copy each in a bucket of their own", plans[c].what);
        }
        if (p.zero >= 2) {
            int bad = 0;
            for (int b = 0; b < p.n_buckets; b++)
                for (int r = p.buckets[b].first_param; r <= p.buckets[b].last_param; r++)
                    if (p.params[p.grad_order[r]].stage == p.buckets[b].stage)
                        bad += p.params[p.grad_order[r]].chunk != p.params[p.grad_order[p.buckets[b].first_param]].chunk;
            check(bad == 0, "%s: no bucket spans two chunks", plans[c].what);
        }
        program_free(&p);
    }
    head_bucket_under_zb();
    /* one bucket per stage when everything fits */
    check(compile_with(&p, "plans/tiny.lua", "cpu", "buckets.mb=1000", NULL) == 0 && p.n_buckets == 1 &&
          p.buckets[0].numel == p.param_numel[0], "buckets.mb = 1000: one bucket of the whole arena");
    program_free(&p);
    return summary();
}
