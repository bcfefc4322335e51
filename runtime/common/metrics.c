/* metrics.c: what a step achieved against what the plan promised.
 *
 * MFU = model FLOPs of the step (flops_per_token x global tokens, the
 * compiler's 6N + 12 L h s) / (step time x ranks x one device's peak at the
 * plan's precision, from the cluster description).  Memory: the bytes this
 * rank's arenas took at setup (every wf_alloc made before the loop, transient
 * startup buffers excluded) against the compiler's plan for the rank's stage;
 * on CUDA also the device's memory in use as cudaMemGetInfo sees it (the
 * CUDA context, cuBLASLt's and NCCL's own memory included), and, after the
 * warm-up step, every byte the runtime allocated itself (arenas and the
 * buffers of weft/runtime_buffers.h, device and pinned host) against the
 * plan, which counts both.  At the end: the process's peak resident memory
 * (getrusage), which also holds what no plan counts: the program's code,
 * the MPI library's buffers, the BLAS library's threads. */
#include <string.h>
#include <sys/resource.h>

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
    int k = snprintf(out, n, ", \"tokens_per_s\": %.9g, \"mfu\": %.9g, \"mem_bytes\": %.0f, "
                     "\"mem_planned_bytes\": %.0f, \"device_mem_used_bytes\": %s",
                     m.tokens_per_s, m.mfu, c->arena_bytes, c->p->planned_bytes, device);
    size_t own, pinned;
    if (k > 0 && (size_t)k < n && wf_backend_alloc_live(c, &own, &pinned) == 0)
        snprintf(out + k, n - (size_t)k, ", \"device_alloc_bytes\": %zu, \"pinned_alloc_bytes\": %zu",
                 own, pinned);
}

/* One line at startup: rank 0's arenas against the plan, and the largest
 * ratio over all ranks (pipeline stages differ); "every rank to the byte"
 * when no rank's arenas differ from its stage's plan at all (a few bytes
 * off on one rank do not show in the ratio's three digits). */
void wf_memory_report(wf_ctx *c) {
    const wf_program *p = c->p;
    double ratio = p->planned_bytes > 0 ? c->arena_bytes / p->planned_bytes : 0, worst = ratio;
    WF_MPI(c, MPI_Allreduce(&ratio, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    int exact = c->arena_bytes == p->planned_bytes, all_exact = exact;
    WF_MPI(c, MPI_Allreduce(&exact, &all_exact, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
    size_t used, total, own, pinned;
    char device[96] = "";
    if (wf_backend_alloc_live(c, &own, &pinned) == 0) {
        /* CUDA: the plan also holds the buffers the first step allocates;
         * wf_device_memory_report compares then */
        wf_log(c, "memory: rank 0's arenas %.2f MiB at setup, of the %.2f MiB planned with the "
                  "runtime's own buffers (compared after the first step)\n", c->arena_bytes / 1048576.0,
               p->planned_bytes / 1048576.0);
        return;
    }
    if (wf_backend_mem_info(&used, &total) == 0)
        snprintf(device, sizeof device, "; device %.1f of %.1f MiB in use", used / 1048576.0,
                 total / 1048576.0);
    wf_log(c, "memory: rank 0 allocated %.2f MiB, planned %.2f MiB (%.3fx; largest over ranks "
              "%.3fx%s)%s\n", c->arena_bytes / 1048576.0, p->planned_bytes / 1048576.0, ratio, worst,
           all_exact ? ", every rank to the byte" : "", device);
}

/* After the warm-up step the lazily allocated buffers exist: rank 0's own
 * allocations (device + pinned host) against its stage's plan (which holds
 * both), and the smallest and largest ratios over all ranks. */
void wf_device_memory_report(wf_ctx *c) {
    static int done;
    size_t own, pinned;
    if (done || wf_backend_alloc_live(c, &own, &pinned) != 0) return;
    done = 1;
    double planned = c->p->planned_bytes, held = (double)own + (double)pinned;
    double ratio = planned > 0 ? held / planned : 0, lo = ratio, hi = ratio;
    WF_MPI(c, MPI_Allreduce(&ratio, &lo, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD));
    WF_MPI(c, MPI_Allreduce(&ratio, &hi, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    wf_log(c, "device memory: weft allocated %.2f MiB (%.2f MiB device, %.2f MiB pinned host), "
              "planned %.2f MiB (%.6fx; over ranks %.6fx..%.6fx)\n", held / 1048576.0, own / 1048576.0,
           pinned / 1048576.0, planned / 1048576.0, ratio, lo, hi);
}

/* The peak resident set of this process, bytes (Linux reports KiB). */
static double peak_rss_bytes(void) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    return (double)ru.ru_maxrss * 1024.0;
}

/* One line at the end: rank 0's planned and allocated bytes beside its peak
 * resident memory, and the largest peak over all ranks. */
void wf_memory_summary(wf_ctx *c) {
    double rss = peak_rss_bytes(), most = rss;
    WF_MPI(c, MPI_Allreduce(&rss, &most, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD));
    wf_log(c, "peak RSS: rank 0 %.2f MiB (largest over ranks %.2f MiB); its plan %.2f MiB, allocated "
              "%.2f MiB\n", rss / 1048576.0, most / 1048576.0, c->p->planned_bytes / 1048576.0,
           c->arena_bytes / 1048576.0);
}
