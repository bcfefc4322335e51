/* pipeline.c: the `schedule` pass.  Builds each pipeline stage's instruction
 * list for the plan's schedule and proves it before anything is emitted:
 * every send meets its receive, collectives agree, backward follows forward,
 * no wait cycle, activation slots within what the memory plan reserves. */
#include <stdlib.h>

#include "program.h"
#include "verify.h"

int program_slots(const Program *p, int stage) {
    return p->sched ? p->sched->slots[stage] : 1;
}

int pass_schedule(Program *p) {
    if (p->pp == 1) return 0;  /* one stage: the step is microbatches in order */
    sched_kind kind;
    char err[1024];
    if (sched_parse(p->schedule, &kind) != 0) {
        wf_error("%s: pipeline.schedule: unknown schedule '%s'", p->plan_path, p->schedule);
        return -1;
    }
    p->sched = wf_checked(calloc(1, sizeof *p->sched), "schedule pass");
    if (schedule_build(p->sched, kind, p->pp, p->accum, p->virt, err, sizeof err) != 0) {
        wf_error("%s: pipeline: %s", p->plan_path, err);
        return -1;
    }
    /* PipeDream-2BW: stage 0 owns the tied wte and exchanges it with the last
     * stage by messages in the verified lists (no blocking collective) */
    int tied = 0;
    for (int k = 0; k < p->n_params; k++) tied |= p->params[k].tied_to >= 0;
    if (kind == SCHED_2BW && tied && schedule_tie_2bw(p->sched, err, sizeof err) != 0) {
        wf_error("%s: pipeline: %s", p->plan_path, err);
        return -1;
    }
    /* Megatron's scatter/gather: each tp rank sends its slice, the receiving
     * stage all-gathers them (GATHER instructions, verified over pp x tp) */
    if (p->scatter_gather && schedule_scatter_gather(p->sched, p->tp, err, sizeof err) != 0) {
        wf_error("%s: pipeline.scatter_gather: %s", p->plan_path, err);
        return -1;
    }
    if (schedule_verify(p->sched, err, sizeof err) != 0) {
        wf_error("%s: pipeline schedule %s failed verification: %s", p->plan_path, p->schedule, err);
        return -1;
    }
    return 0;
}
