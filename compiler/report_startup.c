/* report_startup.c: `weft check`'s start-up line: the host memory one rank
 * takes for the parameters' values while they are initialised or loaded
 * from a checkpoint (runtime/common/startup_peak.h, the bound the runtime
 * checks its measured start-up allocations against, startup_mem.c). */
#include <stdio.h>
#include <string.h>

#include "program.h"
#include "startup_peak.h"

/* The idle arena stage s's 16-bit parameters are made or loaded in as
 * floats (startup_peak.h), from the sizes the program states
 * (emit.c's .grad_numel, the moments' and the activation arena's). */
static int idle_arena_of(const Program *p, int s, int resume) {
    double param = (double)p->param_numel[s];
    double grads = (double)(p->zero >= 2 ? p->grad_buf_numel[s] : p->train_numel[s]);
    double moment = (double)(p->zero ? p->shard_numel[s] : p->train_numel[s]);  /* equal ZeRO shards: buckets.c */
    int slots = program_slots(p, s);
    double acts = (double)p->act_numel[s] * (slots > 0 ? slots : 1) + (double)p->region_numel[s];
    return wf_startup_idle_arena(p->zero, grad16(p), resume, p->offload_optimizer, param, grads, moment, acts);
}

/* stage s's bound, bytes, on its dp rank with the most own floats (the
 * bound grows with them; the runtime states each rank's); resume: a
 * checkpoint loaded */
double startup_peak_of(const Program *p, int s, int resume) {
    double whole = 1, own = 1, transposed = 0, numel = 0;  /* own: at least 1, as wf_own_most */
    for (int k = 0; k < p->n_params; k++) {
        const ir_param *q = &p->params[k];
        if (q->stage != s) continue;
        double w = 1;
        for (int d = 0; d < q->ndim; d++) w *= (double)q->gshape[d];
        for (int r = 0; r < (p->zero ? p->dp : 1); r++) {
            double o = wf_startup_own((double)q->offset, (double)q->numel, q->frozen, p->zero,
                                      q->frozen ? 0 : (double)p->buckets[q->bucket].offset,
                                      q->frozen ? 0 : (double)p->buckets[q->bucket].numel, p->dp, r);
            if (o > own) own = o;
        }
        if (w > whole) whole = w;
        if (q->transposed && w > transposed) transposed = w;
        numel += (double)q->numel;
    }
    if (p->param_numel) numel = (double)p->param_numel[s];  /* the arena, as the runtime's param_numel */
    int two = resume && strcmp(p->schedule, "pipedream-2bw") == 0;
    int idle = param16(p) && p->zero < 3 && p->param_numel ? idle_arena_of(p, s, resume) : WF_IDLE_NONE;
    double held = wf_startup_held(p->zero >= 3, param16(p), two, idle, numel);
    return wf_startup_peak(p->zero >= 3, resume, whole, own, transposed, held);
}

/* where every stage's 16-bit parameters are made as floats, in words (no
 * apostrophes: tests quote this report in shell words) */
static const char *idle_where(const Program *p, int resume) {
    int a = idle_arena_of(p, 0, resume);
    for (int s = 1; s < p->pp; s++)
        if (idle_arena_of(p, s, resume) != a) return "by stage";
    return a == WF_IDLE_GRADS ? "in the gradient arena"
         : a == WF_IDLE_MOMENT ? "in the AdamW first moment"
         : a == WF_IDLE_ACTS ? "in the activation arena"
         : "in host memory";
}

void startup_report(const Program *p, FILE *out) {
    double init = 0, resume = 0;
    for (int s = 0; s < p->pp; s++) {
        double i = startup_peak_of(p, s, 0), r = startup_peak_of(p, s, 1);
        if (i > init) init = i;
        if (r > resume) resume = r;
    }
    char a[32], b[32];
    program_human_bytes(init, a, sizeof a);
    program_human_bytes(resume, b, sizeof b);
    fprintf(out, "start-up host memory peak per rank: %s initialising, %s resuming (the largest stage)\n", a, b);
    if (p->zero >= 3)
        fprintf(out, "          ZeRO-3: each rank makes or reads only its own range of each parameter, one at a\n"
                     "          time, into its shard and master (a resume reads the file's elements that range\n"
                     "          touches a piece at a time: at most 64 MiB, or the range if smaller)\n");
    else if (param16(p))
        fprintf(out, "          16-bit parameters are made or read as floats first, in an idle arena where one holds\n"
                     "          the stage, else in host memory: initialising %s,\n"
                     "          resuming %s%s; a resume then reads one whole tensor at a time, the moments a piece at a time\n",
                idle_where(p, 0), idle_where(p, 1),
                strcmp(p->schedule, "pipedream-2bw") == 0 ? " (the older 2BW version in host memory)" : "");
    else
        fprintf(out, "          made in place; a resume reads one whole tensor at a time, then the moments a piece at a time\n");
}
