/* memory_pack.c: first-fit by decreasing size (memory_pack.h).  Items are
 * placed largest first (ties: the earlier interval first); each goes to the
 * lowest gap between the items already placed whose intervals meet its own.
 * On the chains of a backward pass (each gradient lives a few ops) this
 * finds the largest set of gradients live at one step plus little more. */
#include <stdlib.h>

#include "memory_pack.h"
#include "program.h"

static const pack_item *sort_items;

static int by_size(const void *a, const void *b) {
    const pack_item *x = &sort_items[*(const int *)a], *y = &sort_items[*(const int *)b];
    if (x->size != y->size) return x->size < y->size ? 1 : -1;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return *(const int *)a - *(const int *)b;
}

static int by_offset(const void *a, const void *b) {
    const pack_item *x = &sort_items[*(const int *)a], *y = &sort_items[*(const int *)b];
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

long pack_first_fit(pack_item *items, int n) {
    if (n <= 0) return 0;
    int *order = wf_checked(malloc(sizeof(int) * (size_t)n), "memory pass");
    int *meet = wf_checked(malloc(sizeof(int) * (size_t)n), "memory pass");
    for (int k = 0; k < n; k++) order[k] = k;
    sort_items = items;
    qsort(order, (size_t)n, sizeof *order, by_size);
    long top = 0;
    for (int k = 0; k < n; k++) {
        pack_item *it = &items[order[k]];
        int m = 0;
        for (int j = 0; j < k; j++) {
            const pack_item *q = &items[order[j]];
            if (q->begin <= it->end && it->begin <= q->end) meet[m++] = order[j];
        }
        qsort(meet, (size_t)m, sizeof *meet, by_offset);
        long at = 0;
        for (int j = 0; j < m; j++) {
            const pack_item *q = &items[meet[j]];
            if (q->offset >= at + it->size) break;  /* the gap before q holds it */
            if (q->offset + q->size > at) at = q->offset + q->size;
        }
        it->offset = at;
        if (at + it->size > top) top = at + it->size;
    }
    free(order);
    free(meet);
    return top;
}
