/* report_ckpt.c: `weft check`'s checkpoint section: when a periodic save
 * happens, and what --async-save copies to host memory at the step boundary
 * (runtime/common/ckpt.c, save_folder: a save streams tensor by tensor, and
 * under --async-save every rank holds a copy of its own pieces until its
 * background thread has streamed them); the per-rank bounds are runtime/common/ckpt_peak.h's, which the
 * runtime checks its measured peak against.  `weft inspect` shows each rank's part with the same
 * figures (ckpt_stage_of). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_peak.h"
#include "program.h"
#include "schedule.h"

/* the whole tensor's values (its tp shards gathered) */
static double whole_numel(const ir_param *q) {
    double n = 1;
    for (int d = 0; d < q->ndim; d++) n *= (double)q->gshape[d];
    return n;
}

/* 2BW's older weight version is saved too, as the runtime does for this
 * schedule at any pipeline depth (emit.c's weight_delay) */
static int saves_delayed(const Program *p) { return strcmp(p->schedule, "pipedream-2bw") == 0; }

ckpt_stage ckpt_stage_of(const Program *p, int s) {
    int delayed = saves_delayed(p);
    double whole = 0, owned = 0, wmax = 1, lmax = 1, trainable = 0, frozen = 0, shard = 0;
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k];
        if (q->stage != s) continue;
        whole += whole_numel(q);  /* tied copies too */
        if (q->tied_to < 0) owned += whole_numel(q);  /* a tied copy's owner saves it */
        if (whole_numel(q) > wmax) wmax = whole_numel(q);
        if ((double)q->numel > lmax) lmax = (double)q->numel;
        if (q->frozen) frozen += (double)q->numel;
        else trainable += (double)q->numel;
    }
    /* ZeRO: dp rank 0's shard of each bucket (equal shards: buckets.c pads each bucket) */
    for (int b = 0; b < p->n_buckets; b++)
        if (p->buckets[b].stage == s) shard += (double)(p->buckets[b].numel / p->dp);
    ckpt_stage c;
    /* --async-save: every rank copies what it owns as fp32, dp 0 the most:
     * weights (the masters in 16-bit modes; ZeRO-3's shard, else the tp
     * shard, an upper bound for ZeRO-1/2's masters), AdamW m and v (ZeRO's
     * shard, else the tp shard) and 2BW's older weights; frozen ones whole */
    double weights = (p->zero >= 3 ? shard : trainable) + frozen, moments = p->zero ? shard : trainable;
    c.held = 4.0 * (weights * (1 + delayed) + 2 * moments);
    /* then its thread streams them as the synchronous save does (ckpt_peak.h, the runtime's own bound) */
    c.peak = wf_ckpt_async_peak(wmax, lmax, p->tp, 0, 0, c.held);
    c.sync = wf_ckpt_save_peak(wmax, lmax, p->tp, 0, 0, 0);
    /* without MPI_THREAD_MULTIPLE the writer holds its whole stage instead */
    c.whole_stage = wf_ckpt_save_peak(wmax, lmax, p->tp, 0, 0, wf_ckpt_whole_stage_held(whole, delayed));
    c.dp0 = wf_ckpt_save_peak(wmax, lmax, p->tp, 0, 1, 0);
    c.other = wf_ckpt_save_peak(wmax, lmax, p->tp, 1, 1, 0);
    c.model_file = 4.0 * owned;
    c.optim_file = 4.0 * owned * (2 + delayed);  /* exp_avg, exp_avg_sq (and delayed) */
    return c;
}

void ckpt_report(const Program *p, FILE *out) {
    int delayed = saves_delayed(p);
    char a[32];
    if (p->ckpt_every > 0)
        fprintf(out, "checkpoint every %d steps (train.ckpt_every) into --ckpt DIR; --save DIR at the end\n",
                p->ckpt_every);
    else
        fprintf(out, "checkpoint at the end into --save DIR (train.ckpt_every = 0: no periodic saves)\n");
    /* (no apostrophes: tests quote this report in shell words) */
    fprintf(out, "          a save goes tensor by tensor: each rank copies its shard of one tensor to host memory,\n"
                 "          dp 0 gathers the ZeRO pieces, the writer rank of each stage (dp 0, tp 0) the tp shards,\n"
                 "          and writes the whole tensor before the next; --async-save: at the step boundary\n"
                 "          (after the optimizer update of the step saved, before the first forward of the next)\n"
                 "          every rank copies the fp32 weights, AdamW m and v%s it owns to host memory,\n"
                 "          and a thread on each rank saves them as above while training goes on\n",
            delayed ? " and the older 2BW weights" : "");
    const char *rows[] = { "save peak", "async copy", "async peak", "async whole" };
    const char *what[] = { "host memory per writer, one whole tensor at a time",
                           "host memory per rank (dp 0, the most), held until written",
                           "host memory per writer while its thread writes",
                           "host memory per writer where MPI gives no MPI_THREAD_MULTIPLE:\n"
                           "               it copies its whole stage at the step boundary and only its thread writes" };
    ckpt_stage *st = wf_checked(malloc(sizeof *st * (size_t)p->pp), "checkpoint report");
    double other = 0, dp0 = 0, files = 0;
    for (int s = 0; s < p->pp; s++) {
        st[s] = ckpt_stage_of(p, s);
        if (st[s].dp0 > dp0) dp0 = st[s].dp0;
        if (st[s].other > other) other = st[s].other;
        files += st[s].model_file + st[s].optim_file;
    }
    for (int r = 0; r < 4; r++) {
        fprintf(out, "  %-12s", rows[r]);
        for (int s = 0; s < p->pp; s++) {
            const ckpt_stage *c = &st[s];
            program_human_bytes(r == 0 ? c->sync : r == 1 ? c->held : r == 2 ? c->peak : c->whole_stage, a, sizeof a);
            fprintf(out, " %12s", a);
        }
        fprintf(out, "  %s\n", what[r]);
    }
    free(st);
    char b[32];
    program_human_bytes(dp0, a, sizeof a);
    program_human_bytes(other, b, sizeof b);
    fprintf(out, "  %-12s %12s  on another rank of dp 0 (its tp shard of one tensor), %s on the rest\n",
            "save others", a, b);
    if (p->pp > 1) {  /* each stage's writer writes its own shard: nothing passes through one rank */
        program_human_bytes(files, a, sizeof a);
        fprintf(out, "  %-12s %12s  of tensors, %d shards a file set (model-0000S-of-%05d.safetensors, optimizer-...),\n"
                     "               each written by its stage writer; world rank 0 only writes the Hugging Face\n"
                     "               indexes (model.safetensors.index.json, optimizer...) and the manifest\n",
                "shards", a, p->pp, p->pp);
    }
}
