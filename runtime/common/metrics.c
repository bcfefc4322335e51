/* metrics.c: what a step achieved against what the plan promised.
 *
 * MFU = model FLOPs of the step (flops_per_token x global tokens, the
 * compiler's 6N + 12 L h s) / (step time x ranks x one device's peak at the
 * plan's precision, from the cluster description).  Memory: the bytes this
 * rank's arenas took at setup (every wf_alloc made before the loop, transient
 * startup buffers excluded) against the compiler's plan for the rank's stage;
 * on CUDA also the device's memory in use as cudaMemGetInfo sees it. */
#include <string.h>

#include "internal.h"

wf_step_metrics wf_step_metrics_of(const wf_ctx *c, double ms) {
    const wf_program *p = c->p;
    wf_step_metrics m = { 0, 0 };
    double tokens = (double)p->global_batch * p->seq, s = ms / 1000.0;
    if (s <= 0) return m;
    m.tokens_per_s = tokens / s;
    if (p->peak_tflops > 0)
        m.mfu = p->flops_per_token * tokens / (s * c->world * p->peak_tflops * 1e12);
    return m;
}

/* The keys appended to each --metrics line, after the existing ones. */
void wf_metrics_tail(const wf_ctx *c, double ms, char *out, size_t n) {
    wf_step_metrics m = wf_step_metrics_of(c, ms);
    size_t used, total;
    char device[64] = "null";
    if (wf_backend_mem_info(&used, &total) == 0) snprintf(device, sizeof device, "%zu", used);
    snprintf(out, n, ", \"tokens_per_s\": %.9g, \"mfu\": %.9g, \"mem_bytes\": %.0f, "
             "\"mem_planned_bytes\": %.0f, \"device_mem_used_bytes\": %s",
             m.tokens_per_s, m.mfu, c->arena_bytes, c->p->planned_bytes, device);
}

/* One line at startup: rank 0's arenas against the plan, and the largest
 * ratio over all ranks (pipeline stages differ). */
void wf_memory_report(wf_ctx *c) {
    const wf_program *p = c->p;
    double ratio = p->planned_bytes > 0 ? c->arena_bytes / p->planned_bytes : 0, worst = ratio;
    WF_MPI(c, MPI_Allreduce(&ratio, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    size_t used, total;
    char device[96] = "";
    if (wf_backend_mem_info(&used, &total) == 0)
        snprintf(device, sizeof device, "; device %.1f of %.1f MiB in use", used / 1048576.0,
                 total / 1048576.0);
    wf_log(c, "memory: rank 0 allocated %.2f MiB, planned %.2f MiB (%.3fx; largest over ranks "
              "%.3fx)%s\n", c->arena_bytes / 1048576.0, p->planned_bytes / 1048576.0, ratio, worst,
           device);
}
