/* kernel_profile.c: libweft_kprof.so, GPU time by kernel class for any CUDA
 * program, with no change to it.  The CUDA driver loads the library named by
 * CUDA_INJECTION64_PATH and calls its InitializeInjection(); from then on CUPTI
 * records every kernel, memcpy and memset with its GPU start and end.  At exit
 * the records are summed by class (GEMM, attention, layernorm, ...) and by
 * kernel, and written to $WEFT_KPROF (default: standard error):
 *
 *   CUDA_INJECTION64_PATH=build/runtime/cuda/libweft_kprof.so WEFT_KPROF=k.txt prog
 *
 * The classes are matched on the (mangled) kernel names: weft's own kernels
 * are named for what they do, cuBLAS(Lt) kernels contain gemm/xmma/cutlass,
 * NCCL's start with nccl. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER_BYTES (8u << 20)
#define MAX_KERNELS 512

typedef struct {
    char name[160];
    unsigned long long ns, count;
} kernel_row;

/* Per process, not per execution context (unlike the runtime's state,
 * cuda_rt.h's wf_cuda_ctx): the driver loads this library into a whole
 * program, which need not be weft's, and CUPTI's buffer callbacks carry no
 * context of their own. */
static kernel_row rows[MAX_KERNELS];
static int n_rows;
static unsigned long long first_start = ~0ull, last_end;

static const char *const CLASSES[][2] = {
    /* class, substrings (|-separated), first match wins */
    { "communication (NCCL)", "nccl" },
    /* nvjet: the GEMM kernels cuBLAS(Lt) 12.8 and later run on Hopper */
    { "GEMM (cuBLAS/cuBLASLt)", "gemm|xmma|cutlass|nvjet|sm90_|sm80_|cublas" },
    { "attention", "attention|flash|softmax_bwd|causal_softmax" },
    { "layernorm", "layernorm" },
    { "classifier (softmax + cross-entropy)", "xent|dlogits|vocab_rowmax|vocab_exp" },
    { "optimizer (AdamW, norm, overflow)", "adamw|sumsq|nonfinite|overflow" },
    { "casts (16-bit rounding)", "round|bf16|fp16|cast" },
    { "elementwise (GELU, residual, embedding, bias)", "" },
};
enum { N_CLASSES = sizeof CLASSES / sizeof CLASSES[0] };

static int class_of(const char *name) {
    for (int k = 0; k < N_CLASSES - 1; k++) {
        char pats[96];
        snprintf(pats, sizeof pats, "%s", CLASSES[k][1]);
        for (char *save = NULL, *s = strtok_r(pats, "|", &save); s; s = strtok_r(NULL, "|", &save))
            if (strstr(name, s)) return k;
    }
    return N_CLASSES - 1;
}

static void add(const char *name, unsigned long long start, unsigned long long end) {
    if (start < first_start) first_start = start;
    if (end > last_end) last_end = end;
    int i = 0;
    while (i < n_rows && strncmp(rows[i].name, name, sizeof rows[i].name - 1) != 0) i++;
    if (i == n_rows) {
        if (n_rows == MAX_KERNELS) i = MAX_KERNELS - 1;  /* the last row takes the rest */
        else snprintf(rows[n_rows++].name, sizeof rows[0].name, "%s", name);
    }
    rows[i].ns += end - start;
    rows[i].count++;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records) {
    *buffer = aligned_alloc(8, BUFFER_BYTES);
    *size = *buffer ? BUFFER_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid) {
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS) {
        if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || r->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)r;
            add(k->name ? k->name : "(unnamed kernel)", k->start, k->end);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
            const CUpti_ActivityMemcpy6 *m = (const CUpti_ActivityMemcpy6 *)r;
            add("memcpy", m->start, m->end);
        } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
            const CUpti_ActivityMemset4 *m = (const CUpti_ActivityMemset4 *)r;
            add("memset", m->start, m->end);
        }
    }
    free(buffer);
}

static int by_time(const void *a, const void *b) {
    unsigned long long x = ((const kernel_row *)a)->ns, y = ((const kernel_row *)b)->ns;
    return x < y ? 1 : x > y ? -1 : 0;
}

static void report(void) {
    cuptiActivityFlushAll(1);
    const char *path = getenv("WEFT_KPROF");
    FILE *out = path && *path ? fopen(path, "w") : stderr;
    if (!out) out = stderr;
    unsigned long long total = 0, cls[N_CLASSES] = { 0 }, other = 0;
    for (int i = 0; i < n_rows; i++) {
        total += rows[i].ns;
        if (!strcmp(rows[i].name, "memcpy") || !strcmp(rows[i].name, "memset")) other += rows[i].ns;
        else cls[class_of(rows[i].name)] += rows[i].ns;
    }
    double span = last_end > first_start ? (double)(last_end - first_start) : 0.0;
    fprintf(out, "kernel time by class (GPU busy %.1f ms of a %.1f ms span, %.1f%%)\n", total / 1e6,
            span / 1e6, span > 0 ? 100.0 * (double)total / span : 0.0);
    for (int k = 0; k < N_CLASSES; k++)
        if (cls[k]) fprintf(out, "  %-48s %10.2f ms %6.1f%%\n", CLASSES[k][0], cls[k] / 1e6,
                            100.0 * (double)cls[k] / (double)(total ? total : 1));
    if (other) fprintf(out, "  %-48s %10.2f ms %6.1f%%\n", "memcpy / memset", other / 1e6,
                       100.0 * (double)other / (double)(total ? total : 1));
    qsort(rows, (size_t)n_rows, sizeof rows[0], by_time);
    fprintf(out, "top kernels:\n");
    for (int i = 0; i < n_rows && i < 15; i++)
        fprintf(out, "  %10.2f ms %8llu x  %.100s\n", rows[i].ns / 1e6, rows[i].count, rows[i].name);
    if (out != stderr) fclose(out);
}

/* Called by the CUDA driver when CUDA_INJECTION64_PATH names this library. */
int InitializeInjection(void) {
    if (cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS) return 0;
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    atexit(report);
    return 1;
}
