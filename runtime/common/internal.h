/* internal.h: the runtime's own view of the execution context.  Generated code
 * sees wf_ctx only through rt.h. */
#ifndef WEFT_INTERNAL_H
#define WEFT_INTERNAL_H

#include <mpi.h>
#include <stdio.h>

#include "coll.h"
#include "data.h"
#include "data_vlm.h"
#include "opt_backend.h"
#include "watchdog.h"
#include "weft/rt.h"

typedef struct wf_options {
    int steps;                 /* stop after this step (default: the plan's) */
    const char *data;          /* token file (default: the plan's) */
    const char *save;          /* checkpoint folder written at the end */
    const char *resume;        /* checkpoint folder to start from */
    const char *ckpt;          /* folder for periodic checkpoints (plan's ckpt_every) */
    int keep;                  /* --keep N: --ckpt holds step_N folders, the newest N kept */
    int async_save;            /* --async-save: files written by a thread while training goes on */
    const char *metrics;       /* JSON lines, one per step, full precision */
    const char *trace;         /* Chrome trace of every schedule instruction */
    int quiet;
    long inject_step[8];       /* --inject-overflow STEP[:RANK] (repeatable): an */
    int inject_rank[8];        /* inf in that rank's gradient at that step */
    int n_inject;
    int no_graph;              /* --no-graph: CUDA runs each step eagerly (the CPU has no graphs) */
    double fault_timeout;      /* --fault-timeout S, else the plan's fault.timeout_s */
    int profile;               /* --profile: time per op class per step (profile.c) */
} wf_options;

/* fp16 dynamic loss scaling (loss_scale.c), DeepSpeed's semantics. */
typedef struct wf_scaler {
    double scale;              /* the loss gradient is multiplied by it */
    double used;               /* the scale the last step ran with */
    int hysteresis;            /* overflows still tolerated before the scale drops */
    long good_steps;           /* overflow-free steps since the last overflow */
    long skipped;              /* steps skipped for an overflow, in total */
    int overflow;              /* the last step overflowed (and was skipped) */
} wf_scaler;

struct wf_ctx {
    const wf_program *p;
    wf_options opt;
    int rank, world, dp_rank, tp_rank, stage;
    /* one communicator per wf_group (coll.h): each mesh axis's, then the tied
     * pair of pipeline ends (the tied wte); MPI_COMM_NULL where the rank is in none */
    MPI_Comm group_comm[WF_GROUPS];
    float *next_params;            /* PipeDream-2BW: the newest weights; params are one behind */
    /* what this rank updates (all of it, or its ZeRO-1 shards) and where the
     * AdamW moments of that part live (zero.c) */
    long *own_lo, *own_hi, *moment_base, moment_numel;
    long *zero_base;               /* ZeRO: bucket k's shard in the moments */
    int *zero_counts, *zero_displs;
    float *zero_buf;               /* ZeRO-1, 16-bit gradients: the float parts summed after the dp sum (grad16.c) */
    int zero_unplaced;             /* ZeRO-1: shards reduced, not yet at their places in the arena */
    float *grad_shard;             /* ZeRO >= 2: this rank's gradients (compact, like the moments) */
    float *param_shard;            /* ZeRO-3: this rank's parameters (compact, like the moments) */
    float *next_shard;             /* ZeRO-3 under 2BW: the newest version's (param_shard is one behind) */
    wf_req *gather_req;            /* ZeRO-3: one all-gather per bucket */
    float *comm;                   /* staging for tensor-parallel collectives */
    float *dp16;                   /* plan.dp_comm 16-bit: a bucket's packed gradients (dp_comm.c) */
    int dp16_packed;               /* buckets packed since the last wf_buckets_wait unpacked them */
    float *recv;                   /* received activations waiting for their forward */
    /* arenas, allocated once before the loop */
    float *params, *grads, *adam_m, *adam_v;
    float *master;                 /* bf16 / fp16: the fp32 master weights this rank
                                      updates, laid out like the moments; else NULL */
    /* param16 (param16.c): the 16-bit parameter arenas (the version params
     * starts on, 2BW's other; their address as float *), and the float
     * scratch one op's parameters are widened into */
    float *params16[2];
    float *wscratch;
    /* the GEMM weight the last wf_widen_params left in 16 bits in place (a
     * negative count, CUDA): its unwritten slot in the scratch, its bits */
    const float *w16_slot;
    const void *w16_bits;
    long w16_n;
    /* grad16 (grad16.c): the float scratch one op's gradients are widened
     * into, the staging of the sums, and the bucket whose dp sum is in
     * flight in it (-1: none) */
    float *gscratch, *gstage;
    int g16_inflight;
    wf_scaler scaler;
    wf_opt_table ranges;           /* the ranges AdamW, the norm and the overflow check cover */
    float *acts, *dacts, *scratch, *losses;
    float *stage16;                /* act16 on the CPU: a kernel call's operands as floats
                                      (cpu/stage16.h); NULL otherwise */
    int staging;                   /* 1 while a CPU kernel runs on staged floats */
    int32_t *tokens, *targets;     /* the step's microbatches, accum x B*T each */
    int micro_index;               /* microbatch the single-stage step is on */
    wf_data *data;
    /* a VLM (p->image_positions > 0): its WVLM file instead of data (batch_vlm.c) */
    struct wf_vlm *vlm;
    uint8_t *images;               /* the step's images, accum x B x H*W*C (2BW: two batches) */
    uint8_t *loss_mask;            /* accum x B*T: 0 no loss, 1 text, 2 descriptive (2BW: two batches) */
    double step_loss_positions;    /* loss positions in the step's global batch */
    double vlm_positions[2];       /* ... of the batch in each half of the buffers (2BW: batch r in r % 2) */
    float vlm_scale[2];            /* and its loss scale, 1 / positions */
    double desc_loss_sum, desc_count;  /* this rank's descriptive positions this step */
    double last_desc_loss;         /* the step's mean loss on descriptive positions */
    /* bucket all-reduces in flight */
    wf_req *bucket_req;
    int n_inflight;
    const wf_coll_ops *coll;       /* MPI or NCCL (coll.h), set by wf_backend_setup */
    int graph_capture;             /* a CUDA graph is capturing the step (cuda/graph.c) */
    /* the step being run */
    long step;                     /* optimizer steps completed */
    double loss_sum;               /* this rank's sum of token losses this step */
    float loss_scale;
    double last_loss, last_norm, last_lr;
    FILE *metrics;
    /* PipeDream-2BW without flush, pp > 1 (twobw.c) */
    float *wver[2];                /* weight versions: batch b computes on wver[b % 2] (ZeRO-3: shards) */
    long frame_base;               /* real batch of the instruction lists' frame batch 0 */
    float *tied_buf;               /* the wte gradient on its way to stage 0 */
    MPI_Request tied_grad_req, tied_w_req[2];
    MPI_Request metrics_req;       /* loss and squared gradient norm of step metrics_step */
    double metrics_sum[4], metrics_lr; /* loss, squared norm; a VLM's descriptive loss sum and count */
    double metrics_positions;      /* a VLM: the loss positions of batch metrics_step */
    long metrics_step;             /* -1: none in flight */
    struct { long step; double loss, lr, norm, desc; } ready[2]; /* reduced, not yet logged */
    int n_ready;
    double step_ms[2];             /* wall time of the call that optimized step t, at t % 2 */
    double arena_bytes;            /* allocated for training (metrics.c), this rank */
    unsigned long params_version;  /* bumped by every write of parameter values (wf_params_changed) */
    struct wf_cuda_ctx *cuda;      /* the CUDA backend's state (cuda/cuda_rt.h); NULL on the CPU */
};

/* Every writer of parameter values calls this once it has written them (or
 * queued the writes on the device): the optimizer, ZeRO's parameter
 * all-gathers, 2BW's tied wte, initialization and checkpoint loading.  The
 * CUDA backend's 16-bit weight copies made before are stale from then on
 * (cuda/cast.c); the CPU backend keeps none. */
static inline void wf_params_changed(wf_ctx *c) { c->params_version++; }

/* A parameter's whole tensor, its tp shards gathered: the floats a
 * checkpoint holds (ckpt.c) and a load reads at once (startup_mem.c). */
static inline long wf_whole_numel(const wf_param *q) {
    long n = 1;
    for (int d = 0; d < q->ndim; d++) n *= q->gshape[d];
    return n;
}

/* --profile (profile.c): every WF_MPI call's time is communication wait. */
int wf_prof_comm_begin(void);          /* the class that was running, -1 when off */
void wf_prof_comm_end(int prev);
void wf_prof_start(int on);            /* zeroes the clocks; the class is "other" */
void wf_prof_stop(wf_ctx *c);          /* after the last step */
void wf_prof_summary(wf_ctx *c, int steps);  /* every rank; rank 0 prints */

/* Errors: print the rank, the call and the reason; bring the whole job down. */
void wf_fatal(const wf_ctx *c, const char *call, const char *where, const char *fmt, ...)
    __attribute__((noreturn, format(printf, 4, 5)));
#define WF_STR2(x) #x
#define WF_STR(x) WF_STR2(x)
#define WF_WHERE __FILE__ ":" WF_STR(__LINE__)
/* every MPI call is a wait the watchdog (watchdog.h) times */
#define WF_MPI(c, call)                                                        \
    do {                                                                       \
        wf_watch_enter(#call, WF_WHERE);                                       \
        int wf_pc_ = wf_prof_comm_begin();                                     \
        int wf_rc_ = (call);                                                   \
        wf_prof_comm_end(wf_pc_);                                              \
        wf_watch_leave();                                                      \
        if (wf_rc_ != MPI_SUCCESS) wf_mpi_fatal((c), #call, WF_WHERE, wf_rc_); \
    } while (0)
void wf_mpi_fatal(const wf_ctx *c, const char *call, const char *where, int rc)
    __attribute__((noreturn));
void *wf_alloc(const wf_ctx *c, size_t bytes, const char *what);      /* arenas (device-visible) */
void *wf_host_alloc(const wf_ctx *c, size_t bytes, const char *what); /* host temporaries, free() */
/* The backend's allocator for wf_alloc (cpu/alloc.c: aligned host memory;
 * cuda/device.c: managed memory the host code here can also touch, counted
 * as c's; c NULL in kernel tests); NULL on failure. */
void *wf_backend_alloc(const wf_ctx *c, size_t bytes);
/* Offloaded state (offload.optimizer = "cpu"): memory that stays on the host
 * (cpu: the same as wf_backend_alloc; cuda: pinned host memory, which only
 * host code touches).  wf_alloc_host_arena is wf_alloc on it. */
void *wf_backend_alloc_host(const wf_ctx *c, size_t bytes);
void *wf_alloc_host_arena(const wf_ctx *c, size_t bytes, const char *what);
size_t wf_alloc_total(void);   /* bytes wf_alloc has handed out in this process */
/* The device's memory in use and its size (cuda/device.c: cudaMemGetInfo);
 * -1 where the backend cannot tell (cpu/alloc.c). */
int wf_backend_mem_info(size_t *used, size_t *total);
/* What the backend allocated itself for c and still holds, device (managed
 * included) and pinned host bytes (cuda/device.c); -1 where it does not
 * count (cpu/alloc.c: the arenas are all there is). */
int wf_backend_alloc_live(const wf_ctx *c, size_t *device, size_t *pinned);
/* metrics.c: per-step throughput, MFU and memory, for the log and --metrics. */
typedef struct wf_step_metrics {
    double tokens_per_s, mfu;     /* mfu: a fraction of the cluster's peak */
} wf_step_metrics;
wf_step_metrics wf_step_metrics_of(const wf_ctx *c, double ms);
void wf_metrics_tail(const wf_ctx *c, double ms, char *out, size_t n);
void wf_memory_report(wf_ctx *c);
void wf_memory_summary(wf_ctx *c);   /* the end: planned, allocated, peak RSS */
/* Once, after the first step (every rank): what the backend allocated itself
 * (wf_backend_alloc_live) against the plan; nothing where it does not count. */
void wf_device_memory_report(wf_ctx *c);
int wf_is_root(const wf_ctx *c);
void wf_log(const wf_ctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The backend's hooks around the common code (cpu/backend.c; cuda/async.c,
 * cuda/coll_nccl.c, cuda/graph.c). */
void wf_backend_setup(wf_ctx *c);      /* after the MPI groups: picks c->coll, NCCL setup */
/* Host code is about to read or write device data: wait for the device.  The
 * CPU's is a no-op; on CUDA kernels run asynchronously. */
void wf_backend_sync(wf_ctx *c);
void wf_backend_copy(wf_ctx *c, void *dst, const void *src, size_t bytes);  /* in stream order */
void wf_backend_zero(wf_ctx *c, void *dst, size_t bytes);
/* Host code is about to write arena memory that no kernel in flight reads
 * (the next microbatch's tokens).  Nothing on the CPU, nor on CUDA devices
 * that share managed memory with running kernels; on one that cannot
 * (cudaDevAttrConcurrentManagedAccess 0) the write would fault: it waits. */
void wf_backend_host_write(wf_ctx *c);
/* Token losses the device summed itself (a captured step cannot hand them to
 * the host); 0 on the CPU.  Takes them: the sum restarts from 0. */
double wf_backend_loss_take(wf_ctx *c);
/* Runs one training step: p->step on the CPU; on CUDA eagerly or as a
 * replayed CUDA graph (cuda/graph.c). */
void wf_backend_run_step(wf_ctx *c);
void wf_load_step(wf_ctx *c);          /* step.c: every microbatch of the step, on the host */
/* groups.c: the groups of the mesh, from the program's axes.  The member
 * ranks of rank's group g, ascending (room for the world; NULL: count only),
 * and *index its position among them; returns how many, 0 where the rank is
 * in no such group (the tied group off the pipeline's ends). */
int wf_group_members(const wf_program *p, int rank, wf_group g, int *members, int *index);
/* the MPI_Comm_split colour (the first member; MPI_UNDEFINED: no group) and key */
void wf_group_of(const wf_program *p, int rank, wf_group g, int *color, int *key);
/* dp_comm.c: a bucket's n fp32 gradients to 16-bit values in place (in its
 * first half) and back, in the plan's 16-bit type, through c->dp16; and n
 * 16-bit values widened into floats elsewhere (ZeRO-1's reduced shard) */
void wf_dp16_pack(wf_ctx *c, float *g, long n);
void wf_dp16_unpack(wf_ctx *c, float *g, long n);
void wf_dp16_widen(wf_ctx *c, float *dst, const void *src, long n);
wf_dtype wf_dp16_type(wf_ctx *c);  /* WF_B16 or WF_F16: the plan's */
/* Their conversions, in stream order on the device that holds the
 * gradients (cpu/backend_host.c; cuda/dp_comm.cu): n floats to the plan's
 * 16-bit type, rounded to nearest even, and n such values back to floats;
 * also the 16-bit gradients' (grad16.c; cuda/grad16.cu): x's first n 16-bit
 * values (its first half) widened into its n floats, and dst[i] += the
 * value of the 16-bit src[i] (a float add). */
void wf_backend_to16(wf_ctx *c, void *dst, const float *src, long n);
void wf_backend_from16(wf_ctx *c, float *dst, const void *src, long n);
void wf_backend_from16_in_place(wf_ctx *c, float *x, long n);
void wf_backend_add16(wf_ctx *c, float *dst, const void *src, long n);
/* ... and the 16-bit dst[i] = its value + the float src[i], rounded once
 * (2BW's tied wte: the received copy's gradient into the stored one) */
void wf_backend_add_into16(wf_ctx *c, void *dst, const float *src, long n);
void wf_groups_split(wf_ctx *c);  /* every group's communicator, dp_rank, tp_rank, stage */
MPI_Comm wf_group_comm(const wf_ctx *c, wf_group g);  /* MPI_COMM_NULL: not in one */
const char *wf_group_name(wf_group g);                /* "dp", ..., "tied" */

/* Pieces of the runtime, one file each. */
void wf_blas_select(int argc, char **argv);             /* blas_select.c, before MPI */
void wf_blas_threads(const wf_ctx *c);                  /* after MPI */
void wf_blas_describe(char *out, size_t n);
/* The OpenBLAS core type this CPU's flags allow when `core` (the library's
 * guess) is weaker, else NULL; *flags names the deciding features. */
const char *wf_blas_better_core(const char *core, const char **flags);
/* bind.c (CPU): more ranks on the node than cores: bind each to a core, dealt
 * in turn in stage order (slot: the node-local rank me's core index, from
 * every node-local rank's stage); the note says what was done, for the log */
int wf_bind_slot(const int *stage, int n, int me, int cores);
int wf_bind_cpus(void);  /* the CPUs this process may run on */
void wf_bind_ranks(const wf_ctx *c, MPI_Comm node, int local, int local_n);
const char *wf_bind_note(void);
void wf_init_params(wf_ctx *c);                         /* init.c */
float wf_init_value(const wf_ctx *c, const wf_param *q, long i);
void wf_init_range(const wf_ctx *c, const wf_param *q, long lo, long hi, float *w);
long wf_global_index(const wf_param *q, int tp_rank, long i);
double wf_normal(uint64_t seed, const char *name, uint64_t index);
double wf_lr_at(const wf_program *p, long step);        /* optim.c */
double wf_grad_norm(wf_ctx *c);
double wf_local_grad_sq(wf_ctx *c);                    /* this rank's share of |g|^2 */
void wf_tp_partial_grads(wf_ctx *c);
void wf_adamw(wf_ctx *c, double lr, float grad_scale);
/* ckpt.c: wf_ckpt_save writes the checkpoint folder dir (every rank calls
 * it; "saved" is logged once it is in place); wf_ckpt_save_periodic writes
 * the --ckpt one (with --keep N, DIR/step_N, the newest N kept);
 * wf_ckpt_check_target refuses, before training, a --save / --ckpt folder
 * that a save would not replace (set: a --keep folder of checkpoints). */
void wf_ckpt_save(wf_ctx *c, const char *dir);
void wf_ckpt_save_periodic(wf_ctx *c);
void wf_ckpt_check_target(const wf_ctx *c, const char *dir, int set);
/* --async-save: waits for the checkpoint being written in the background
 * (every save does first; wf_main before it exits). */
void wf_ckpt_wait(wf_ctx *c);
void wf_ckpt_load(wf_ctx *c, const char *dir);
uint64_t wf_params_digest(const wf_ctx *c);
/* param16.c: the 16-bit parameter arenas (allocate), float copies for the
 * startup and their narrowing into the arenas once rounded, a version
 * widened (the caller frees), a copy, element off's address */
void wf_params16_alloc(wf_ctx *c);
void wf_params16_startup(wf_ctx *c);
int wf_params16_idle(const wf_ctx *c);  /* the idle arena start-up borrows (startup_peak.h's WF_IDLE_*) */
void wf_params16_adopt(wf_ctx *c);
float *wf_params16_widened(wf_ctx *c, const float *version);
void wf_params16_copy(wf_ctx *c, float *dst, const float *src);
void *wf_params16_at(float *version, long off);
void wf_params16_narrow(wf_ctx *c, void *dst, const float *src, long n);
wf_dtype wf_params16_type(wf_ctx *c);  /* the collectives' type of the stored values */
/* grad16.c: the arenas (allocate); a bucket's dp sum started through the
 * staging, the one in flight finished; the step's remaining sums (the
 * buckets of parameters summed after the dp sum, tp and tied) and ZeRO-1's
 * shards stored back; the norm's share and the overflow check on the
 * 16-bit gradients */
void wf_grad16_alloc(wf_ctx *c);
void wf_grad16_zero1_alloc(wf_ctx *c);                  /* ZeRO-1's float parts (wf_zero_setup) */
float *wf_grad16_float_part(wf_ctx *c, int k);          /* ZeRO-1: parameter k's, [own_lo, own_hi) */
void wf_grad16_bucket_start(wf_ctx *c, int k);
void wf_grad16_finish(wf_ctx *c);
void wf_grad16_bucket_wait(wf_ctx *c, int k);          /* ZeRO-2 */
void wf_grad16_step_sums(wf_ctx *c);
void wf_grad16_tp_sums(wf_ctx *c);                      /* 2BW: tp sums only */
void wf_grad16_widened(wf_ctx *c, float *dst, long off, long n);
int wf_grad16_2bw_staged(const wf_ctx *c);  /* 2BW over dp, fp32 dp sums: the tied wte's bucket in the staging */
float *wf_grad16_tied_grad(wf_ctx *c, const wf_param *q);  /* 2BW's tied wte exchange */
void wf_grad16_tied_done(wf_ctx *c, const wf_param *q, const float *g);
void wf_grad16_add(wf_ctx *c, long off, const float *src, long n);
double wf_grad16_sumsq(wf_ctx *c);
int wf_grad16_nonfinite(wf_ctx *c);
void wf_zero_setup(wf_ctx *c);                          /* zero.c */
void wf_zero_bucket_start(wf_ctx *c, int k);
void wf_zero_after_reduce(wf_ctx *c);
void wf_zero_gather_params(wf_ctx *c);
void wf_zero_gather_version(wf_ctx *c, float *version);  /* 2BW: the version its step updated */
/* [lo, hi): the elements of parameter k that dp rank r owns under ZeRO
 * (its part of the bucket's shard r; empty for a frozen one) */
void wf_zero_own_range(const wf_program *p, int k, int r, long *lo, long *hi);
long wf_zero_part(const wf_program *p, int k);
long wf_zero_part_at(const wf_ctx *c, int k);
/* The part of parameter k this rank updates, [own_lo, own_hi): x[i] is its
 * element i, wherever ZeRO keeps it (zero_grads.c). */
float *wf_own_grad(wf_ctx *c, int k);
void wf_zero_grads_clear(wf_ctx *c);
void wf_zero_copy_shard(wf_ctx *c, float *dst, const float *src);  /* ZeRO-3 2BW: version over version */
long wf_frozen_at(const wf_program *p, int k);         /* a frozen parameter's offset in c->params */
void wf_zero3_init(wf_ctx *c);                          /* zero_startup.c: ZeRO-3, this rank's ranges only */
void wf_zero3_place(wf_ctx *c, int k, float *own, int master, float *shard, float *other);
void *wf_startup_alloc(const wf_ctx *c, size_t bytes, const char *what); /* startup_mem.c: counted, */
void wf_startup_free(void *q);                          /* host buffers of start-up */
double wf_startup_bound(const wf_ctx *c);
long wf_startup_piece_floats(const wf_ctx *c);  /* startup_mem.c: a checkpoint read's piece (startup_peak.h) */
void wf_startup_report(wf_ctx *c);
/* root logs every rank's host memory peak beside its bound (peak_report.c) */
void wf_report_peaks(wf_ctx *c, const char *label, double measured, double bound);
void wf_moment_keep(wf_ctx *c, const float *full, float *moment);
long wf_own_most(const wf_ctx *c);                      /* zero.c: one parameter's most, this rank */
void wf_scaler_init(wf_ctx *c);                         /* loss_scale.c */
int wf_grads_overflow(wf_ctx *c);
void wf_scaler_update(wf_ctx *c, int overflow);
void wf_master_setup(wf_ctx *c);                        /* optim.c */
void wf_master_alloc(wf_ctx *c);
void wf_adamw_into(wf_ctx *c, float *weights, double lr, float grad_scale, int skip_tied_copy);
void wf_version_copy(wf_ctx *c, float *dst, const float *src);  /* 2BW: version over version */
void wf_opt_ranges_setup(wf_ctx *c);                    /* opt_ranges.c, after wf_zero_setup */
float *wf_opt_grads_base(wf_ctx *c);
void wf_vlm_batch_setup(wf_ctx *c);                     /* batch_vlm.c: a VLM plan's data */
void wf_vlm_batch_load(wf_ctx *c, int slot, long batch, uint64_t base);
void wf_vlm_add_losses(wf_ctx *c);
void wf_vlm_batch_close(wf_ctx *c);
void wf_2bw_setup(wf_ctx *c);                           /* twobw.c */
void wf_2bw_use_micro(wf_ctx *c, int m);
void wf_2bw_step_begin(wf_ctx *c);
void wf_2bw_load_step(wf_ctx *c);                       /* a captured step: before its replay */
void wf_2bw_capture_begin(wf_ctx *c);                   /* a captured step records its tail */
void wf_2bw_run_tail(wf_ctx *c);                        /* after the replay: the tail recorded */
void wf_2bw_optimizer_step(wf_ctx *c);
void wf_2bw_finish(wf_ctx *c);                          /* after the epilogue: drained */
int wf_2bw_real_micro(const wf_ctx *c, int m);
/* preempt.c: SIGTERM / SIGUSR1 stop the job after a step agreed by all
 * ranks, with a checkpoint, exiting with this code (EX_TEMPFAIL: try again) */
#define WF_EXIT_PREEMPTED 75
void wf_preempt_setup(wf_ctx *c);
int wf_preempt_poll(wf_ctx *c);     /* between steps: the signal all ranks stop for, or 0 */
void wf_preempt_end(wf_ctx *c);     /* the last agreement completed */
const char *wf_resume_auto(wf_ctx *c);  /* resume_auto.c: a checkpoint folder, or NULL */
void wf_trace_begin(wf_ctx *c);                         /* trace.c */
void wf_trace_write(wf_ctx *c);

#endif
