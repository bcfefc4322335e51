/* zero_plan.c: the `zero` pass.  Plans, at compile time, what ZeRO stages 2
 * and 3 keep per rank besides the compact shards:
 *
 *   - ZeRO >= 2: backward writes each bucket's gradients into a bucket
 *     buffer, reduce-scatters it into the rank's gradient shard and waits for
 *     that after the next bucket of the chunk is complete (or at the chunk's
 *     end).  A buffer is live from the bucket's first gradient write to that
 *     wait; buffers of buckets never live together share memory.
 *   - ZeRO-3: parameters live as shards; each span of ops using a bucket's
 *     parameters is preceded by an all-gather into a gather buffer, started
 *     `zero_prefetch` gathers ahead so that it overlaps compute.  The buffer
 *     is live from that start to the span's last use.  Under zb-h1 the
 *     backward's uses are its B half's (W reads no weights) and, under full
 *     recompute, W's rebuild of each block.
 *
 * Both assignments are first fit over live intervals, like a register
 * allocator for intervals of different widths. */
#include <stdlib.h>
#include <string.h>

#include "memory_pack.h"
#include "ops.h"
#include "program.h"

/* Two sets of closed intervals [lo, hi] overlap in time. */
static int overlap(const int *lo_a, const int *hi_a, int n_a, const int *lo_b, const int *hi_b, int n_b) {
    for (int i = 0; i < n_a; i++)
        for (int j = 0; j < n_b; j++)
            if (lo_a[i] <= hi_b[j] && lo_b[j] <= hi_a[i]) return 1;
    return 0;
}

/* First fit: item k (in `order`) takes the lowest offset at which no item
 * placed before it that is live at the same time overlaps its floats.
 * live(k, &lo, &hi) gives k's live intervals.  Returns the arena size. */
typedef int (*live_fn)(const Program *p, int k, const int **lo, const int **hi);

static long first_fit(const Program *p, const int *order, int n, const long *size, long *offset,
                      live_fn live) {
    long top = 0;
    for (int a = 0; a < n; a++) {
        int k = order[a];
        const int *lo_k, *hi_k;
        int n_k = live(p, k, &lo_k, &hi_k);
        long off = 0;
        for (int moved = 1; moved;) {
            moved = 0;
            for (int b = 0; b < a; b++) {
                int j = order[b];
                const int *lo_j, *hi_j;
                int n_j = live(p, j, &lo_j, &hi_j);
                if (!overlap(lo_k, hi_k, n_k, lo_j, hi_j, n_j)) continue;
                if (off < offset[j] + align16(size[j]) && offset[j] < off + align16(size[k])) {
                    off = offset[j] + align16(size[j]);
                    moved = 1;
                }
            }
        }
        offset[k] = off;
        if (off + align16(size[k]) > top) top = off + align16(size[k]);
    }
    return top;
}

/* ---- ZeRO >= 2: gradient bucket buffers ------------------------------------ */

/* Live intervals of each bucket's buffer, two at most (bucket_intervals):
 * bucket k's at 2k, 2k + 1, g_n[k] of them */
static int *g_lo, *g_hi, *g_n;

static int bucket_live(const Program *p, int k, const int **lo, const int **hi) {
    (void)p;
    *lo = &g_lo[2 * k];
    *hi = &g_hi[2 * k];
    return g_n[k];
}

/* Whether, on chunk k's stage, another microbatch's B half of chunk k runs
 * between some microbatch's B and W halves (zero-bubble schedules). */
static int b_before_w(const Program *p, int k) {
    const schedule *s = p->sched;
    if (!s || !s->split_backward) return 0;
    int stage = k % p->pp, pending = 0;
    for (int i = 0; i < s->n[stage]; i++) {
        const sched_instr *in = &s->ins[stage][i];
        if (in->chunk != k) continue;
        if (in->op == SI_BWD_INPUT && pending++ > 0) return 1;
        if (in->op == SI_BWD_WEIGHT) pending--;
    }
    return 0;
}

/* Bucket b's buffer is live from its first gradient write to its wait.
 * Under a split backward (zero-bubble) a bucket started in B (buckets.c's
 * start_in_b) lives inside one B call, the others inside one W call (their
 * gradients are written there, and their wait follows), but for one that
 * B writes in part (the chunked LM head beside gradients from W), live
 * from that B to its W.  B and W calls never run at once, so times are on
 * two axes: W's, the backward op indices, and B's, the same plus n_ops.
 * Returns the count of intervals (lo[], hi[]). */
static int bucket_intervals(const Program *p, const ir_bucket *bk, int lo[2], int hi[2]) {
    int n = p->n_ops, k = 0;
    int split = p->pp > 1 && p->sched && p->sched->split_backward;
    if (!bk->start_in_b) lo[k] = bk->first_write_op, hi[k++] = bk->wait_after_op;
    if (bk->start_in_b) lo[k] = n + bk->first_write_op, hi[k++] = n + bk->wait_after_op;
    else if (split && bk->written_in_b)  /* from its first write in B to that B's end */
        lo[k] = n + bk->first_write_op, hi[k++] = n + n - 1 - p->chunk_first_op[bk->chunk];
    return k;
}

static void plan_bucket_buffers(Program *p, const int *last_use) {
    int n = p->n_ops;
    g_lo = wf_checked(malloc(sizeof(int) * (size_t)(2 * p->n_buckets + 1)), "zero pass");
    g_hi = wf_checked(malloc(sizeof(int) * (size_t)(2 * p->n_buckets + 1)), "zero pass");
    g_n = wf_checked(malloc(sizeof(int) * (size_t)(p->n_buckets + 1)), "zero pass");
    long *size = wf_checked(malloc(sizeof(long) * (size_t)p->n_buckets + 1), "zero pass");
    long *off = wf_checked(malloc(sizeof(long) * (size_t)p->n_buckets + 1), "zero pass");
    int *order = wf_checked(malloc(sizeof(int) * (size_t)p->n_buckets + 1), "zero pass");
    for (int b = 0; b < p->n_buckets; b++) {
        ir_bucket *bk = &p->buckets[b];
        bk->chunk = p->params[p->grad_order[bk->first_param]].chunk;
        bk->first_write_op = n;
        for (int r = bk->first_param; r <= bk->last_param; r++) {
            int j = n - 1 - last_use[p->grad_order[r]];
            if (j < bk->first_write_op) bk->first_write_op = j;
        }
        /* waited once the next bucket completed later is started: its
         * reduce-scatter overlaps the backward ops in between.  Under a
         * split backward the next one started in the same half (B or W,
         * buckets.c's start_in_b): a bucket started in B is waited in that
         * B, before the next microbatch's B writes its buffer again */
        bk->wait_after_op = n - 1 - p->chunk_first_op[bk->chunk];
        for (int c = b + 1; c < p->n_buckets; c++) {
            const ir_bucket *next = &p->buckets[c];
            if (next->stage != bk->stage || p->params[p->grad_order[next->first_param]].chunk != bk->chunk)
                break;
            if (next->start_in_b != bk->start_in_b) continue;
            if (next->ready_after_op > bk->ready_after_op) {
                bk->wait_after_op = next->ready_after_op;
                break;
            }
        }
        /* A split backward (zero-bubble) completes buckets in W, the
         * microbatch's weight half, but for those B writes whole (started
         * and waited in B).  The chunked LM head writes its weight gradient
         * in its B half: in a bucket with gradients from W too (an untied
         * head beside others), where another microbatch's B can run before
         * a W, that bucket takes gradients between W calls, so it is live
         * through the whole chunk and shares no float of the stage. */
        if (!bk->start_in_b && b_before_w(p, bk->chunk) && bk->written_in_b) {
            bk->first_write_op = n - p->chunk_end_op[bk->chunk];
            bk->wait_after_op = n - 1 - p->chunk_first_op[bk->chunk];
        }
        g_n[b] = bucket_intervals(p, bk, &g_lo[2 * b], &g_hi[2 * b]);
        size[b] = bk->numel;
    }
    for (int s = 0; s < p->pp; s++) {
        int m = 0;
        for (int b = 0; b < p->n_buckets; b++)
            if (p->buckets[b].stage == s) order[m++] = b;
        /* by first write (insertion sort: few buckets) */
        for (int i = 1; i < m; i++)
            for (int j = i; j > 0 && g_lo[2 * order[j - 1]] > g_lo[2 * order[j]]; j--) {
                int t = order[j];
                order[j] = order[j - 1];
                order[j - 1] = t;
            }
        p->grad_buf_numel[s] = first_fit(p, order, m, size, off, bucket_live);
    }
    for (int b = 0; b < p->n_buckets; b++) p->buckets[b].buffer = off[b];
    free(g_lo);
    free(g_hi);
    free(g_n);
    free(size);
    free(off);
    free(order);
}

/* ---- ZeRO-3: parameter gathers --------------------------------------------- */

static int cmp_int2(const void *a, const void *b) {
    const int *x = a, *y = b;
    return x[0] != y[0] ? x[0] - y[0] : x[1] - y[1];
}

static int cmp_gather(const void *a, const void *b) {
    const zero_gather *x = a, *y = b;
    if (x->stage != y->stage) return x->stage - y->stage;
    return x->start != y->start ? x->start - y->start : x->bucket - y->bucket;
}

/* Zero-bubble: each chunk's backward runs as B (input gradients) and W
 * (weight gradients, later).  Times: forward op i at i, its B at 2n-1-i, its
 * W at 3n-1-i. */
static int split_backward(const Program *p) {
    return p->pp > 1 && p->sched && p->sched->split_backward;
}

/* The generated function time t lies in: a chunk's forward, backward (or B)
 * or W.  A single stage runs forward() and backward() back to back, so
 * gathers may run from one into the other (the LM head's wte is gathered
 * once). */
static int func_of(const Program *p, int t) {
    int n = p->n_ops;
    if (p->pp == 1) return 0;
    if (t >= 2 * n) return 2 * p->n_chunks + p->ops[3 * n - 1 - t].chunk;
    return t < n ? p->ops[t].chunk : p->n_chunks + p->ops[2 * n - 1 - t].chunk;
}

/* Whether op o's backward reads its parameters in B (emit_ops.c's
 * emit_backward_half): W's kernels (dW = x^T dy, the norms' and biases'
 * sums, the embedding's scatter) read none, and an op without inputs (the
 * embedding) has no B. */
static int b_reads_params(const ir_op *o) {
    return o->n_in > 0 && o->grad_in;
}

static int *ev_lo, *ev_hi, *ev_first, *ev_count;  /* events grouped by bucket */

static int gather_live(const Program *p, int k, const int **lo, const int **hi) {
    (void)p;
    *lo = ev_lo + ev_first[k];
    *hi = ev_hi + ev_first[k];
    return ev_count[k];
}

/* (time, bucket) of every use of a parameter: forward, backward and, under
 * full recompute, the block's forward again just before its backward.  A
 * split backward uses them in B only, except that full recompute rebuilds
 * the block once more before its W (emit_step.c's emit_split_chunk). */
static int collect_uses(const Program *p, int (*uses)[2]) {
    int n = p->n_ops, u = 0, layers = 0, split = split_backward(p);
    for (int i = 0; i < n; i++)
        if (p->ops[i].layer + 1 > layers) layers = p->ops[i].layer + 1;
    /* each layer's last op, found once (a scan per op was quadratic) */
    int *last = wf_checked(calloc((size_t)layers + 1, sizeof(int)), "zero pass");
    for (int i = 0; i < n; i++)
        if (p->ops[i].layer >= 0) last[p->ops[i].layer] = i;
    for (int i = 0; i < n; i++) {
        const ir_op *o = &p->ops[i];
        int rc_time = -1;
        if (p->recompute == RECOMPUTE_FULL && o->layer >= 0) rc_time = 2 * n - 1 - last[o->layer];
        for (int k = 0; k < o->n_param; k++) {
            int b = p->params[o->param[k]].bucket;
            if (b < 0) continue;  /* frozen: in no bucket, whole on every rank, never gathered */
            uses[u][0] = i, uses[u++][1] = b;
            if (!split || b_reads_params(o)) uses[u][0] = 2 * n - 1 - i, uses[u++][1] = b;
            if (rc_time >= 0) uses[u][0] = rc_time, uses[u++][1] = b;
            if (rc_time >= 0 && split) uses[u][0] = rc_time + n, uses[u++][1] = b;
        }
    }
    free(last);
    qsort(uses, (size_t)u, sizeof *uses, cmp_int2);
    return u;
}

/* Gather e starts when gather e - prefetch is waited, never before the
 * function it lies in: each chunk's forward and backward gather their own.
 * With zero_prefetch_mb the depth is as many gathers as keep the parameters
 * gathered ahead of use (gathers from+1 .. e) within that many MiB. */
static int same_function(const Program *p, int a, int e) {
    return a >= 0 && p->gathers[a].stage == p->gathers[e].stage && p->gathers[a].func == p->gathers[e].func;
}

static void set_issues(Program *p) {
    double el = strcmp(p->precision, "fp32") == 0 ? 4.0 : 2.0, cap = p->zero_prefetch_mb * 1048576.0;
    for (int e = 0; e < p->n_gathers; e++) {
        zero_gather *g = &p->gathers[e];
        int from = e;
        if (p->zero_prefetch_mb >= 0) {
            double ahead = 0;
            while (same_function(p, from - 1, e)) {
                double add = el * (double)p->buckets[p->gathers[from].bucket].numel;
                if (ahead + add > cap) break;
                ahead += add;
                from--;
            }
        } else {
            from = e - p->zero_prefetch;
            while (from < e && !same_function(p, from, e)) from++;
        }
        g->issue = p->gathers[from].start;
    }
}

static void plan_gathers(Program *p) {
    int nb = p->n_buckets;
    int (*uses)[2] = wf_checked(malloc(sizeof *uses * (size_t)(4 * 2 * p->n_ops + 1)), "zero pass");
    int nu = collect_uses(p, uses);
    p->gathers = wf_checked(calloc((size_t)nu + 1, sizeof *p->gathers), "zero pass");
    int *open = wf_checked(malloc(sizeof(int) * (size_t)nb), "zero pass"), *cut = wf_checked(calloc((size_t)nb, sizeof(int)), "zero pass");
    for (int b = 0; b < nb; b++) open[b] = -1;
    /* a bucket's uses form one gather until another bucket is used strictly
     * between two of them (so the tied wte, used by the embedding and the LM
     * head, is gathered at each end, not held through the whole pass) */
    int func = -1;
    for (int a = 0; a < nu;) {
        int t = uses[a][0], z = a;
        while (z < nu && uses[z][0] == t) z++;
        if (func_of(p, t) != func) {  /* nothing is held from one function to the next */
            func = func_of(p, t);
            for (int b = 0; b < nb; b++) open[b] = -1;
        }
        for (int q = a; q < z; q++) {
            int b = uses[q][1];
            if (open[b] >= 0 && !cut[b]) {
                p->gathers[open[b]].end = t;
            } else {
                open[b] = p->n_gathers;
                p->gathers[p->n_gathers++] = (zero_gather){ b, p->buckets[b].stage, func, t, t, t };
            }
        }
        for (int b = 0; b < nb; b++) {
            int here = 0;
            for (int q = a; q < z; q++) here |= uses[q][1] == b;
            cut[b] = here ? 0 : open[b] >= 0;
        }
        a = z;
    }
    qsort(p->gathers, (size_t)p->n_gathers, sizeof *p->gathers, cmp_gather);
    /* a gather started before the same bucket's previous span ended joins it */
    /* After merging e into f, nothing before f + 1 changes (an issue time
     * depends only on earlier gathers, and only f's end grew), so the scan
     * resumes there rather than from the start (which made this cubic). */
    for (int merged = 1, from = 0; merged;) {
        merged = 0;
        set_issues(p);
        for (int e = from; e < p->n_gathers && !merged; e++)
            for (int f = 0; f < e && !merged; f++)
                if (p->gathers[f].bucket == p->gathers[e].bucket && p->gathers[e].issue <= p->gathers[f].end) {
                    if (p->gathers[e].end > p->gathers[f].end) p->gathers[f].end = p->gathers[e].end;
                    memmove(&p->gathers[e], &p->gathers[e + 1], sizeof *p->gathers * (size_t)(p->n_gathers - e - 1));
                    p->n_gathers--;
                    merged = 1;
                    from = f + 1;
                }
    }
    /* one gather buffer per bucket, shared by its spans */
    ev_lo = wf_checked(malloc(sizeof(int) * (size_t)p->n_gathers + 1), "zero pass");
    ev_hi = wf_checked(malloc(sizeof(int) * (size_t)p->n_gathers + 1), "zero pass");
    ev_first = wf_checked(calloc((size_t)nb + 1, sizeof(int)), "zero pass");
    ev_count = wf_checked(calloc((size_t)nb + 1, sizeof(int)), "zero pass");
    int *order = wf_checked(malloc(sizeof(int) * (size_t)nb + 1), "zero pass"), m = 0;
    for (int b = 0, at = 0; b < nb; b++) {
        ev_first[b] = at;
        for (int e = 0; e < p->n_gathers; e++)
            if (p->gathers[e].bucket == b) {
                ev_lo[at] = p->gathers[e].issue;
                ev_hi[at++] = p->gathers[e].end;
                ev_count[b]++;
            }
    }
    long *size = wf_checked(malloc(sizeof(long) * (size_t)nb + 1), "zero pass"), *off = wf_checked(calloc((size_t)nb + 1, sizeof(long)), "zero pass");
    for (int b = 0; b < nb; b++) size[b] = p->buckets[b].numel;
    for (int s = 0; s < p->pp; s++) {
        m = 0;
        for (int e = 0; e < p->n_gathers; e++) {  /* the stage's buckets by first start */
            int b = p->gathers[e].bucket, seen = p->gathers[e].stage != s;
            for (int i = 0; i < m; i++) seen |= order[i] == b;
            if (!seen) order[m++] = b;
        }
        p->gather_numel[s] = first_fit(p, order, m, size, off, gather_live);
    }
    for (int b = 0; b < nb; b++) p->buckets[b].gather = off[b];
    free(uses);
    free(open);
    free(cut);
    free(ev_lo);
    free(ev_hi);
    free(ev_first);
    free(ev_count);
    free(order);
    free(size);
    free(off);
}

/* The invariant both plans rest on, checked rather than trusted: buffers of
 * buckets live at the same time (on the same stage) never share a float. */
static int verify_disjoint(const Program *p, const char *what, int gathers) {
    /* each bucket's gathers, listed once: a pair of buckets compares only
     * its own spans (all gathers for every pair made the 1T search slow) */
    int nb = p->n_buckets, ng = gathers ? p->n_gathers : 0, rc = 0;
    int *first = wf_checked(calloc((size_t)nb + 1, sizeof(int)), "zero pass");
    int *list = wf_checked(malloc(sizeof(int) * (size_t)ng + 1), "zero pass");
    for (int e = 0; e < ng; e++) first[p->gathers[e].bucket + 1]++;
    for (int b = 0; b < nb; b++) first[b + 1] += first[b];
    int *fill = wf_checked(calloc((size_t)nb + 1, sizeof(int)), "zero pass");
    for (int e = 0; e < ng; e++) {
        int b = p->gathers[e].bucket;
        list[first[b] + fill[b]++] = e;
    }
    for (int a = 0; a < nb && !rc; a++)
        for (int b = a + 1; b < nb && !rc; b++) {
            const ir_bucket *x = &p->buckets[a], *y = &p->buckets[b];
            long xo = gathers ? x->gather : x->buffer, yo = gathers ? y->gather : y->buffer;
            if (x->stage != y->stage || xo >= yo + y->numel || yo >= xo + x->numel) continue;
            int live = 0;
            if (!gathers) {
                int xl[2], xh[2], yl[2], yh[2];
                int nx = bucket_intervals(p, x, xl, xh), ny = bucket_intervals(p, y, yl, yh);
                live = overlap(xl, xh, nx, yl, yh, ny);
            }
            for (int i = first[a]; gathers && i < first[a + 1]; i++)
                for (int j = first[b]; j < first[b + 1]; j++) {
                    const zero_gather *e = &p->gathers[list[i]], *f = &p->gathers[list[j]];
                    if (e->issue <= f->end && f->issue <= e->end) live = 1;
                }
            if (live) {
                wf_error("%s: internal error: %s of buckets %d and %d overlap while both are live",
                         p->plan_path, what, a, b);
                rc = -1;
            }
        }
    free(first);
    free(list);
    free(fill);
    return rc;
}

static int zero_layout(Program *p) {
    p->shard_numel = wf_checked(calloc((size_t)p->pp, sizeof(long)), "zero pass");
    p->grad_buf_numel = wf_checked(calloc((size_t)p->pp, sizeof(long)), "zero pass");
    p->gather_numel = wf_checked(calloc((size_t)p->pp, sizeof(long)), "zero pass");
    for (int b = 0; b < p->n_buckets; b++) {
        const ir_bucket *bk = &p->buckets[b];
        p->shard_numel[bk->stage] += bk->numel / p->dp;  /* equal parts: buckets.c pads each bucket */
        p->buckets[b].buffer = bk->offset;
        p->buckets[b].wait_after_op = -1;
    }
    for (int s = 0; s < p->pp; s++) {
        p->grad_buf_numel[s] = p->param_numel[s];
        p->gather_numel[s] = p->param_numel[s];
    }
    if (p->zero < 2) return 0;
    int *last_use = wf_checked(malloc(sizeof(int) * (size_t)p->n_params + 1), "zero pass");
    for (int k = 0; k < p->n_params; k++) last_use[k] = -1;
    for (int i = 0; i < p->n_ops; i++)
        for (int k = 0; k < p->ops[i].n_param; k++) last_use[p->ops[i].param[k]] = i;
    plan_bucket_buffers(p, last_use);
    free(last_use);
    if (verify_disjoint(p, "gradient buffers", 0) != 0) return -1;
    if (p->zero < 3) return 0;
    plan_gathers(p);
    /* Frozen parameters (weft.vlm's freeze; no bucket, no gradient) are kept
     * whole on every rank, after the gather buffers: they are never
     * all-gathered, and the emitted P_ offsets and the runtime
     * (zero_params.c) place them at gather_numel - param_numel + offset. */
    for (int s = 0; s < p->pp; s++) p->gather_numel[s] += p->param_numel[s] - p->train_numel[s];
    return verify_disjoint(p, "gather buffers", 1);
}

/* The shards and buffers fixed, the parameters' and gradients' storage
 * (param16.c, grad16.c) can be weighed: their rules count them. */
int pass_zero(Program *p) {
    int rc = zero_layout(p);
    p->param16 = rc == 0 ? param16_decide(p) : 0;
    /* CUDA's GEMMs then read the parameters' own 16 bits: no weight copies,
     * no cast buffer (act16.c; the memory pass counted them before) */
    for (int st = 0; p->param16 && backend_of(p)->param16_gemm && st < p->pp; st++) {
        if (p->cast_numel) p->cast_numel[st] = 0;
        if (p->weight16_numel) p->weight16_numel[st] = 0;
    }
    p->grad16 = rc == 0 ? grad16_decide(p) : 0;
    return rc;
}
