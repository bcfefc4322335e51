/* memory_inplace.c: in-place ops in the memory pass.  An op whose row says
 * `inplace` (ops.h: the bias add after a row-parallel reduction, the
 * residual and position adds, the tensor-parallel copy and all-reduce) may
 * write its output over an input of its size that dies at it: nothing reads
 * that input after the op, forward or backward.  In the stage's recompute
 * region every interval ends at its tensor's last reader (memory_slot.c),
 * so such an input's interval ends at the tick where the output's begins;
 * the two are packed as one item over the union of their intervals and get
 * one offset, and the output records the input as its alias (program.h),
 * the one overlap memory_check.c accepts: same offset and size, meeting at
 * that tick only.  Chains (a partial sum all-reduced in place, then its
 * bias added in place, then the residual) become one item.  The slots are
 * left alone: their places are kept to the end of the chunk, so nothing in
 * them dies at an op. */
#include <stdlib.h>

#include "memory_pack.h"
#include "ops.h"

static int group_of(int *root, int k) {
    while (root[k] != k) k = root[k] = root[root[k]];
    return k;
}

static const Program *sort_p;
static const int *sort_id;

static int by_producer(const void *a, const void *b) {
    int x = sort_p->tensors[sort_id[*(const int *)a]].producer, y = sort_p->tensors[sort_id[*(const int *)b]].producer;
    return x != y ? (x < y ? -1 : 1) : *(const int *)a - *(const int *)b;
}

/* Whether op i may take input a's place: its row allows it, it is no half
 * of a fused pair (the pair's kernel is not element-wise over both), and a
 * has the output's size. */
static int may_take(const Program *p, int i, long in_size, long out_size) {
    const ir_op *o = &p->ops[i];
    const op_row *r = op_row_of(o->kind);
    return r && r->inplace && o->fused == FUSED_NONE && o->dgelu == DGELU_NONE && in_size == out_size;
}

long memory_pack_in_place(Program *p, pack_item *items, const int *kind, const int *id, const char *exact, int n,
                          const int *tick) {
    if (n <= 0) return 0;
    int *item_of = wf_checked(malloc(sizeof(int) * (size_t)(p->n_tensors + 1)), "memory pass");
    int *root = wf_checked(malloc(sizeof(int) * (size_t)n), "memory pass");
    int *order = wf_checked(malloc(sizeof(int) * (size_t)n), "memory pass");
    int *packed_of = wf_checked(malloc(sizeof(int) * (size_t)n), "memory pass");
    pack_item *groups = wf_checked(calloc((size_t)n, sizeof *groups), "memory pass");
    int m = 0;
    for (int t = 0; t <= p->n_tensors; t++) item_of[t] = -1;
    for (int k = 0; k < n; k++) {
        root[k] = k;
        groups[k] = items[k];
        if (kind[k] == PLACE_ACT && exact[k]) {
            item_of[id[k]] = k;
            order[m++] = k;
        }
    }
    sort_p = p;
    sort_id = id;
    qsort(order, (size_t)m, sizeof *order, by_producer);
    for (int q = 0; q < m; q++) {
        int out = order[q], t = id[out], i = p->tensors[t].producer, now = tick[i];
        const ir_op *o = &p->ops[i];
        if (items[out].begin != now) continue;
        for (int k = 0; k < o->n_in; k++) {
            int a = o->in[k], in = a > 0 && a < p->n_tensors ? item_of[a] : -1;
            if (in < 0 || in == out || !may_take(p, i, items[in].size, items[out].size)) continue;
            int g = group_of(root, in);
            if (items[in].end != now || groups[g].end != now) continue;  /* read after op i */
            root[out] = g;
            if (items[out].end > groups[g].end) groups[g].end = items[out].end;
            p->tensors[t].alias = a;
            break;
        }
    }
    int n_groups = 0;
    for (int k = 0; k < n; k++)
        if (root[k] == k) {
            packed_of[k] = n_groups;
            groups[n_groups++] = groups[k];  /* n_groups <= k: an earlier group's place */
        }
    long top = pack_first_fit(groups, n_groups);
    for (int k = 0; k < n; k++) items[k].offset = groups[packed_of[group_of(root, k)]].offset;
    free(item_of);
    free(root);
    free(order);
    free(packed_of);
    free(groups);
    return top;
}
