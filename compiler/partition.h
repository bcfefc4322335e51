/* partition.h: the partition pass's balance (partition.c), for weft plan's
 * memory bound, which must know the split a candidate's build will get
 * without building it. */
#ifndef WEFT_PARTITION_H
#define WEFT_PARTITION_H

#include "program.h"

/* Layers per chunk (out[0..K-1]) minimizing the most expensive chunk;
 * cost[1..L] are the blocks', cost[0] and cost[L+1] the parts outside
 * blocks, glued to the first and last chunk.  Ties go as the pass's own. */
void partition_balance(const double *cost, int L, int K, int *out);
/* cost[0..L+1] as the pass balances them: each op's forward and backward
 * seconds (simulate_op_seconds) summed by block, the ops before the first
 * block in cost[0] and those after it in cost[L+1].  Marks the gradients
 * (graph_mark_gradients) first.  0, or -1 after reporting. */
int partition_costs(Program *p, double *cost);

#endif
