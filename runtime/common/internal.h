/* internal.h: the runtime's own view of the execution context.  Generated code
 * sees wf_ctx only through rt.h. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H

#include <mpi.h>
#include <stdio.h>

#include "data.h"
#include "weft/rt.h"

typedef struct wf_options {
    int steps;                 /* stop after this step (default: the plan's) */
    const char *data;          /* token file (default: the plan's) */
    const char *save;          /* checkpoint folder written at the end */
    const char *resume;        /* checkpoint folder to start from */
    const char *ckpt;          /* folder for periodic checkpoints (plan's ckpt_every) */
    const char *metrics;       /* JSON lines, one per step, full precision */
    const char *trace;         /* Chrome trace of every schedule instruction */
    int quiet;
} wf_options;

struct wf_ctx {
    const wf_program *p;
    wf_options opt;
    int rank, world, dp_rank, tp_rank, stage;
    MPI_Comm dp_comm, tp_comm, pp_comm;
    MPI_Comm tied_comm;            /* first and last stage: the tied wte (or MPI_COMM_NULL) */
    float *next_params;            /* PipeDream-2BW: the newest weights; params are one behind */
    /* what this rank updates (all of it, or its ZeRO-1 shards) and where the
     * AdamW moments of that part live (zero.c) */
    long *own_lo, *own_hi, *moment_base, moment_numel;
    long *zero_base;               /* ZeRO: bucket k's shard in zero_buf / the moments */
    int *zero_counts, *zero_displs;
    float *zero_buf;
    float *comm;                   /* staging for tensor-parallel collectives */
    float *recv;                   /* received activations waiting for their forward */
    /* arenas, allocated once before the loop */
    float *params, *grads, *adam_m, *adam_v;
    float *acts, *dacts, *scratch, *losses;
    int32_t *tokens, *targets;     /* the step's microbatches, accum x B*T each */
    int micro_index;               /* microbatch the single-stage step is on */
    wf_data *data;
    /* bucket all-reduces in flight */
    MPI_Request *bucket_req;
    int n_inflight;
    /* the step being run */
    long step;                     /* optimizer steps completed */
    double loss_sum;               /* this rank's sum of token losses this step */
    float loss_scale;
    double last_loss, last_norm, last_lr;
    FILE *metrics;
};

/* Errors: print the rank, the call and the reason; bring the whole job down. */
void wf_fatal(const wf_ctx *c, const char *call, const char *where, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
#define WF_STR2(x) #x
#define WF_STR(x) WF_STR2(x)
#define WF_WHERE __FILE__ ":" WF_STR(__LINE__)
#define WF_MPI(c, call)                                                        \
    do {                                                                       \
        int wf_rc_ = (call);                                                   \
        if (wf_rc_ != MPI_SUCCESS) wf_mpi_fatal((c), #call, WF_WHERE, wf_rc_); \
    } while (0)
void wf_mpi_fatal(const wf_ctx *c, const char *call, const char *where, int rc)
    __attribute__((noreturn));
void *wf_alloc(const wf_ctx *c, size_t bytes, const char *what);
/* The backend's allocator for wf_alloc (cpu/alloc.c: aligned host memory;
 * cuda/device.c: managed memory the host code here can also touch); NULL on failure. */
void *wf_backend_alloc(size_t bytes);
int wf_is_root(const wf_ctx *c);
void wf_log(const wf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Pieces of the runtime, one file each. */
void wf_blas_select(int argc, char **argv);             /* blas_select.c, before MPI */
void wf_blas_threads(const wf_ctx *c);                  /* after MPI */
void wf_blas_describe(char *out, size_t n);
/* The OpenBLAS core type this CPU's flags allow when `core` (the library's
 * guess) is weaker, else NULL; *flags names the deciding features. */
const char *wf_blas_better_core(const char *core, const char **flags);
void wf_init_params(wf_ctx *c);                         /* init.c */
long wf_global_index(const wf_param *q, int tp_rank, long i);
double wf_normal(uint64_t seed, const char *name, uint64_t index);
double wf_lr_at(const wf_program *p, long step);        /* optim.c */
double wf_grad_norm(wf_ctx *c);
void wf_tp_partial_grads(wf_ctx *c);
void wf_adamw(wf_ctx *c, double lr, float grad_scale);
void wf_ckpt_save(wf_ctx *c, const char *dir);          /* ckpt.c */
void wf_ckpt_load(wf_ctx *c, const char *dir);
uint64_t wf_params_digest(const wf_ctx *c);
void wf_zero_setup(wf_ctx *c);                          /* zero.c */
void wf_zero_bucket_start(wf_ctx *c, int k);
void wf_zero_after_reduce(wf_ctx *c);
void wf_zero_gather_params(wf_ctx *c);
float *wf_moment_full(wf_ctx *c, const float *moment);
void wf_moment_keep(wf_ctx *c, const float *full, float *moment);
void wf_trace_begin(wf_ctx *c);                         /* trace.c */
void wf_trace_write(wf_ctx *c);

#endif
