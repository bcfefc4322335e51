/* simulate.h: `weft simulate`. */
#ifndef WEFT_SIMULATE_H
#define WEFT_SIMULATE_H
#include <stdio.h>

#include "program.h"
#include "weft/bind.h"

/* format: "text" (iteration time, throughput, MFU, bubble, communication,
 * memory per rank), or "chrome" / "svg" for the predicted timeline. */
typedef struct {
    int loaded;
    double fp32_tflops;   /* sgemm per rank, one thread */
    double gemm_balance;  /* GEMM efficiency I / (I + balance) */
    double hbm_gbs, link_gbs, link_latency_us;
    int cores;
    double thread_speedup; /* sgemm with all cores over one thread */
    /* the runtime's own kernels, ns per element: [0] forward, [1] backward */
    double layernorm[2], gelu[2], add[2], attention[2], xent[2];
    double linear[2];     /* GFLOP/s of a linear layer, forward and backward */
    /* a traced reference run: measured over predicted (forward, backward,
     * optimizer), and a lone rank's speedup from every core, both in place */
    double inplace[3];
    double inplace_threads;
    /* CPU seconds an extra gradient bucket's non-blocking collective costs a
     * rank in MPI calls (dp_bucket_us; SIM_DP_BUCKET_US when the file has none) */
    double dp_bucket_s;
    /* seconds of the optimizer step a parameter, one thread (optimizer_ns;
     * when the file has none, 36 bytes at hbm_gbs: weights, gradients and
     * both moments read and written, the gradients zeroed) */
    double optimizer_s;
    /* bus GB/s of tensor parallelism's blocking all-reduce, all-gather and
     * reduce-scatter (tp_gbs; link_gbs each when the file has none) */
    double tp_gbs[3];
    /* a CUDA cluster file (backend = "cuda", weft calibrate --backend cuda):
     * measured GEMM rows { M, N, K, TFLOP/s } (bf16), the attention kernels'
     * TFLOP/s (forward, backward; 0: not measured) and NCCL's all-reduce bus
     * bandwidth inside a node (0: not measured) */
    int cuda;
    int n_gemm;
#define SIM_CUDA_MAX_GEMM 64
    double gemm[SIM_CUDA_MAX_GEMM][4];
    double att_tflops[2];
    int att_head, nccl_gpus;
    double nccl_bus_gbs, nccl_latency_us;
} sim_calibration;

/* An old cluster file without dp_bucket_us: weft-calibrate's measurement on
 * a 2-core machine under Open MPI 4.1, loaded by other work (14.5, 16.8,
 * 34.9 and 36.5 us in four runs; runtime/tools/calibrate.c), rounded.  The
 * runtime itself spends more: bench/dp_buckets.sh (tiny.lua at dp 2, 22
 * buckets of 0.25 MiB against 4 of 1 MiB) saw 0.7-1.2 ms more CPU a step
 * inside MPI_Iallreduce and MPI_Test, 40-67 us an extra bucket. */
#define SIM_DP_BUCKET_US 30.0

/* Reads a cluster file written by weft-calibrate or weft calibrate --backend
 * cuda (a Lua table, run with no libraries); 0 on success, -1 after
 * reporting (a broken measurement is refused). */
int simulate_load_calibration(const char *path, sim_calibration *cal);
int simulate_plan(const Program *p, const sim_calibration *cal, const char *format, FILE *out);
/* Seconds of one microbatch of op i, forward and backward together (less
 * what weft.vlm's freeze leaves out of its backward), as simulate prices it
 * on the plan's device with no calibration: the partition pass balances the
 * pipeline chunks by it (one cost model for both). */
double simulate_op_seconds(const Program *p, int i);
/* Seconds of one rank's optimizer step over a stage of `params` parameters
 * (its 1/dp shard under ZeRO): the CPU calibration's measured rate, or 36
 * bytes a parameter at hbm_gbs. */
double simulate_optimizer_seconds(double params, int zero, int dp, double hbm_gbs, const sim_calibration *cal);

/* CPU backend: what a rank's threads buy when its node runs `ranks` ranks
 * (the calibrated lone-rank speedup, interpolated over the cores it gets;
 * 1 without a CPU calibration or when the ranks outnumber the cores). */
double simulate_thread_gain(int ranks, const sim_calibration *cal);

/* CPU backend, more ranks on a node than cores: whether the runtime binds
 * them to cores in stage order (runtime/cpu/bind.c) on a node of `cores`
 * cores, and why: the plan's cluster.bind under weft/bind.h's rule, for the
 * first node's ranks (a thread each).  The runtime's WEFT_BIND override is
 * not priced. */
wf_bind_why simulate_binding(const Program *p, int cores);
/* The pipeline stages ranks 0 .. node - 1 of the mesh hold (the first
 * node's), and into count[0..pp) (if not NULL) how many of them each. */
int simulate_node_stages(const wf_axis *axes, int n_axes, int pp, int node, double *count);

/* Seconds of one microbatch's forward and backward (recompute and the
 * tensor-parallel collectives included, as simulate_plan's stages price them
 * with cal) of a one-block program's block (layer) and of its other ops
 * before it (the embedding) and after it (final norm, LM head, loss).  weft
 * plan's step-time bound: a stage of n blocks is busy at least n * layer per
 * microbatch.  -1: more than one block or chunk. */
int simulate_layer_seconds(const Program *p, const sim_calibration *cal, double *before, double *layer,
                           double *after);
/* Seconds per microbatch of chunk 0's forward and backward and of stage 0's
 * optimizer step, as simulate_plan predicts them (for weft calibrate). */
int simulate_reference_times(const Program *p, const sim_calibration *cal, double *f, double *b,
                             double *optim);
/* The CUDA file's fields from the table on top of L's stack (calibrate_cuda.c). */
struct lua_State;
int calibration_cuda_read(struct lua_State *L, const char *path, sim_calibration *cal);
#endif
