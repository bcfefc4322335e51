/* program.c: the Program's lifetime: what the passes allocate, freed. */
#include <stdlib.h>
#include <string.h>

#include "program.h"
#include "user_kernel.h"

void program_free(Program *p) {
    user_kernel_free(p);
    free(p->params);
    free(p->hf_consts);
    free(p->ops);
    free(p->tensors);
    free(p->grad_order);
    free(p->buckets);
    free(p->param_numel);
    free(p->train_numel);
    free(p->act_numel);
    free(p->dact_numel);
    free(p->dact_sets);
    free(p->places);
    free(p->chunk_layers);
    free(p->chunk_first_op);
    free(p->chunk_end_op);
    free(p->chunk_in);
    free(p->chunk_out);
    free(p->chunk_in_offset);
    free(p->chunk_in_doffset);
    free(p->region_numel);
    free(p->block_internal);
    free(p->shard_numel);
    free(p->grad_buf_numel);
    free(p->gather_numel);
    free(p->gathers);
    free(p->cast_numel);
    free(p->weight16_numel);
    free(p->stage16_numel);
    if (p->sched) schedule_free(p->sched);
    free(p->sched);
    memset(p, 0, sizeof *p);
}
