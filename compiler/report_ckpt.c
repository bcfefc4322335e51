/* report_ckpt.c: `weft check`'s checkpoint section: when a periodic save
 * happens, and what --async-save copies to host memory at the step boundary
 * (runtime/common/ckpt.c, save_folder: each pipeline stage's writer rank, dp
 * 0 and tp 0, holds its stage's whole fp32 tensors until a background thread
 * has written them).  `weft inspect` shows each rank's part with the same
 * figures (ckpt_stage_of, ckpt_join_bytes). */
#include <stdio.h>
#include <string.h>

#include "program.h"
#include "schedule.h"

/* the whole tensor's values (its tp shards gathered) */
static double whole_numel(const ir_param *q) {
    double n = 1;
    for (int d = 0; d < q->ndim; d++) n *= (double)q->gshape[d];
    return n;
}

ckpt_stage ckpt_stage_of(const Program *p, int s) {
    int delayed = p->pp > 1 && p->sched && p->sched->weight_delay;
    double whole = 0, local = 0, owned = 0;
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k];
        if (q->stage != s) continue;
        whole += whole_numel(q);  /* tied copies too */
        local += (double)q->numel;
        if (q->tied_to < 0) owned += whole_numel(q);  /* a tied copy's owner saves it */
    }
    ckpt_stage c;
    /* fp32 weights (the masters in 16-bit modes), AdamW m and v, and 2BW's
     * older weight version */
    c.held = 4.0 * whole * (3 + delayed);
    /* for a moment: this rank's m and v made whole over a ZeRO shard, the
     * fp32 masters or ZeRO-3's gathered weights, and the tp shards received */
    int full_w = strcmp(p->precision, "fp32") != 0 || p->zero >= 3;
    c.peak = c.held + 4.0 * local * (2 + full_w) + (p->tp > 1 ? 4.0 * local * p->tp : 0);
    c.model_file = 4.0 * owned;
    c.optim_file = 4.0 * owned * (2 + delayed);  /* exp_avg, exp_avg_sq (and delayed) */
    return c;
}

double ckpt_join_bytes(const Program *p) {
    int delayed = p->pp > 1 && p->sched && p->sched->weight_delay;
    double owned = 0;
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].tied_to < 0) owned += whole_numel(&p->params[k]);
    return 4.0 * owned * (2 + delayed);
}

void ckpt_report(const Program *p, FILE *out) {
    int delayed = p->pp > 1 && p->sched && p->sched->weight_delay;
    char a[32];
    if (p->ckpt_every > 0)
        fprintf(out, "checkpoint every %d steps (train.ckpt_every) into --ckpt DIR; --save DIR at the end\n",
                p->ckpt_every);
    else
        fprintf(out, "checkpoint at the end into --save DIR (train.ckpt_every = 0: no periodic saves)\n");
    /* (no apostrophes: tests quote this report in shell words) */
    fprintf(out, "          --async-save: at the step boundary (after the optimizer update of the step saved,\n"
                 "          before the first forward of the next) the writer rank of each stage (dp 0, tp 0)\n"
                 "          copies its whole fp32 weights, AdamW m and v%s to host memory; a thread\n"
                 "          writes them while training goes on, the other ranks keep no copy\n",
            delayed ? " and the older 2BW weights" : "");
    const char *rows[] = { "async copy", "async peak" };
    for (int r = 0; r < 2; r++) {
        fprintf(out, "  %-12s", rows[r]);
        for (int s = 0; s < p->pp; s++) {
            ckpt_stage c = ckpt_stage_of(p, s);
            program_human_bytes(r == 0 ? c.held : c.peak, a, sizeof a);
            fprintf(out, " %12s", a);
        }
        fprintf(out, "%s\n", r == 0 ? "  host memory per writer, held until written"
                                    : "  host memory per writer while copying");
    }
    if (p->pp > 1) {
        /* world rank 0 joins the stages' files, one file at a time, once every
         * stage has written its own */
        program_human_bytes(ckpt_join_bytes(p), a, sizeof a);
        fprintf(out, "  %-12s %12s  on world rank 0 once the files of every stage are written: the stage files\n"
                     "               joined into model.safetensors and optimizer.safetensors, then the folder\n"
                     "               renamed into place\n", "async join", a);
    }
}
