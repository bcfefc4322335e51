/* weft-calibrate-cuda: measures this node's GPUs for `weft simulate
 * --backend cuda` and writes the raw figures as a Lua table:
 *   gemm       TFLOP/s of the runtime's typed GEMM (wf_cuda_gemm: bf16
 *              operands, fp32 accumulation) on the shapes of a transformer
 *              layer (QKV, projection, MLP up and down) at several widths;
 *   attention  TFLOP/s of the runtime's attention (bf16 plan: the
 *              tensor-core flash kernels), forward and backward, counting
 *              the useful causal work as bench/attention_rate.c does:
 *              forward 2 products of T(T+1)/2 x head size, backward 5;
 *   nccl       all-reduce bus bandwidth (nccl-tests' busbw, S / t *
 *              2(n-1)/n) of the largest message and the latency of the
 *              smallest, across the ranks (one GPU each) it was started on.
 * `weft calibrate --backend cuda` runs it (mpirun -np GPUS ...), refuses a
 * broken measurement (a zero or non-finite time) and writes the cluster
 * file.  --quick: tiny sizes, for the CPU emulator (tests/cuda_emu).
 * WEFT_CALIBRATE_FAULT=zero|nan replaces the first GEMM's time (tests). */
#include <mpi.h>
#include <math.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_rt.h"
#include "internal.h"

/* A number as Lua reads it: non-finite values as expressions (1/0, 0/0),
 * so that weft sees and refuses them instead of reading an unknown name. */
static const char *lua_num(char *buf, size_t n, double v) {
    if (isnan(v)) snprintf(buf, n, "0/0");
    else if (isinf(v)) snprintf(buf, n, v > 0 ? "1/0" : "-1/0");
    else snprintf(buf, n, "%.6g", v);
    return buf;
}

static double now_synced(void) {
    cudaDeviceSynchronize();
    return MPI_Wtime();
}

static void *device_buf(wf_ctx *c, size_t bytes) {
    void *p = wf_backend_alloc(c, bytes);
    if (!p) {
        fprintf(stderr, "weft-calibrate-cuda: cannot allocate %zu bytes on the device\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* 0x3c bytes: bf16 0x3c3c and fp32 0x3c3c3c3c are both about 0.0115, finite */
    cudaMemset(p, 0x3c, bytes);
    return p;
}

/* Seconds of one M x N x K bf16 GEMM: the best of `reps` after a warm-up. */
static double gemm_seconds(wf_ctx *c, int M, int N, int K, int reps) {
    void *A = device_buf(c, (size_t)M * K * 2), *B = device_buf(c, (size_t)K * N * 2);
    void *C = device_buf(c, (size_t)M * N * 2);
    wf_cuda_gemm(c, 0, 0, M, N, K, 1.0f, A, CUDA_R_16BF, K, B, CUDA_R_16BF, N, 0.0f, C, CUDA_R_16BF, N, NULL);
    double best = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t0 = now_synced();
        wf_cuda_gemm(c, 0, 0, M, N, K, 1.0f, A, CUDA_R_16BF, K, B, CUDA_R_16BF, N, 0.0f, C, CUDA_R_16BF, N,
                     NULL);
        double t = now_synced() - t0;
        if (t < best) best = t;
    }
    wf_cuda_free(c, A), wf_cuda_free(c, B), wf_cuda_free(c, C);
    return best;
}

/* Seconds of the attention's forward and backward on B sequences of T
 * tokens, H heads of size hs. */
static void attention_seconds(wf_ctx *c, int B, int T, int H, int hs, int reps, double *f, double *b) {
    long n = (long)B * T, C = (long)H * hs;
    float *qkv = device_buf(c, sizeof(float) * (size_t)(n * 3 * C));
    float *dqkv = device_buf(c, sizeof(float) * (size_t)(n * 3 * C));
    float *out = device_buf(c, sizeof(float) * (size_t)(n * C)), *dout = device_buf(c, sizeof(float) * (size_t)(n * C));
    float *lse = device_buf(c, sizeof(float) * (size_t)B * H * T);
    float *scratch = device_buf(c, sizeof(float) * (size_t)B * H * T);
    wf_attention_fwd(c, out, lse, qkv, B, T, (int)C, H);  /* warm-up */
    wf_attention_bwd(c, dqkv, scratch, dout, qkv, out, lse, B, T, (int)C, H);
    *f = *b = INFINITY;
    for (int r = 0; r < reps; r++) {
        double t0 = now_synced();
        wf_attention_fwd(c, out, lse, qkv, B, T, (int)C, H);
        double t1 = now_synced();
        wf_attention_bwd(c, dqkv, scratch, dout, qkv, out, lse, B, T, (int)C, H);
        double t2 = now_synced();
        if (t1 - t0 < *f) *f = t1 - t0;
        if (t2 - t1 < *b) *b = t2 - t1;
    }
    wf_cuda_free(c, qkv), wf_cuda_free(c, dqkv), wf_cuda_free(c, out), wf_cuda_free(c, dout);
    wf_cuda_free(c, lse), wf_cuda_free(c, scratch);
}

/* Seconds of an in-place all-reduce of `bytes` (bf16) across the world. */
static double allreduce_seconds(wf_ctx *c, ncclComm_t comm, cudaStream_t s, size_t bytes, int reps) {
    void *buf = device_buf(c, bytes);
    size_t count = bytes / 2;
    ncclAllReduce(buf, buf, count, ncclBfloat16, ncclSum, comm, s);
    cudaStreamSynchronize(s);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int r = 0; r < reps; r++) ncclAllReduce(buf, buf, count, ncclBfloat16, ncclSum, comm, s);
    cudaStreamSynchronize(s);
    double t = (MPI_Wtime() - t0) / reps, slowest = t;
    MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    wf_cuda_free(c, buf);
    return slowest;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    const char *out = "cuda_measured.lua";
    int quick = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
        else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else {
            if (rank == 0) fprintf(stderr, "usage: weft-calibrate-cuda [-o FILE] [--quick]\n");
            MPI_Finalize();
            return 2;
        }
    }
    int devices = 0;
    if (cudaGetDeviceCount(&devices) != cudaSuccess || devices < 1) {
        fprintf(stderr, "weft-calibrate-cuda: rank %d: no CUDA device\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    cudaSetDevice(rank % devices);
    /* a bf16 plan's context: the attention takes its tensor-core kernels */
    static wf_program prog;
    static wf_ctx ctx;
    prog.precision = WF_BF16;
    ctx.p = &prog;
    ctx.rank = rank, ctx.world = world;
    wf_cuda_attach(&ctx);
    int sms = 0;
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, rank % devices);

    /* a layer's GEMMs at `tokens` rows: QKV (h -> 3h), projection (h -> h),
     * MLP up (h -> 4h) and down (4h -> h) */
    int tokens = quick ? 64 : 8192, reps = quick ? 1 : 10;
    int widths_full[] = { 1024, 2048, 4096, 8192 }, widths_quick[] = { 32, 64 };
    int *widths = quick ? widths_quick : widths_full, nw = quick ? 2 : 4;
    enum { MAX_SHAPES = 16 };
    double shape[MAX_SHAPES][4];
    int ns = 0;
    if (rank == 0)
        for (int w = 0; w < nw; w++) {
            int h = widths[w], dims[4][2] = { { h, 3 * h }, { h, h }, { h, 4 * h }, { 4 * h, h } };
            for (int k = 0; k < 4; k++) {
                double t = gemm_seconds(&ctx, tokens, dims[k][1], dims[k][0], reps);
                const char *fault = getenv("WEFT_CALIBRATE_FAULT");
                if (ns == 0 && fault) t = strcmp(fault, "nan") == 0 ? NAN : 0.0;
                shape[ns][0] = tokens, shape[ns][1] = dims[k][1], shape[ns][2] = dims[k][0];
                shape[ns][3] = 2.0 * tokens * dims[k][1] * dims[k][0] / t / 1e12;
                ns++;
            }
        }
    /* attention: GPT-3-like heads of 128 (64 on the emulator's tiny sizes) */
    int aB = quick ? 1 : 4, aT = quick ? 64 : 2048, aH = quick ? 2 : 16, ahs = quick ? 32 : 128;
    double af = 0, ab = 0;
    if (rank == 0) attention_seconds(&ctx, aB, aT, aH, ahs, reps, &af, &ab);
    double product = 2.0 * aB * aH * (aT * (aT + 1.0) / 2) * ahs;

    /* NCCL across the ranks: bus bandwidth of the largest message, latency of the smallest */
    double bus = 0, lat = 0;
    size_t small = quick ? 1024 : 8192, large = quick ? ((size_t)256 << 10) : ((size_t)512 << 20);
    if (world >= 2) {
        ncclUniqueId id;
        ncclComm_t comm;
        cudaStream_t s;
        if (rank == 0) ncclGetUniqueId(&id);
        MPI_Bcast(&id, (int)sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
        if (ncclCommInitRank(&comm, world, id, rank) != ncclSuccess) {
            fprintf(stderr, "weft-calibrate-cuda: rank %d: ncclCommInitRank failed\n", rank);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        cudaStreamCreate(&s);
        double t_small = allreduce_seconds(&ctx, comm, s, small, quick ? 2 : 100);
        double t_large = allreduce_seconds(&ctx, comm, s, large, quick ? 2 : 20);
        /* a ring all-reduce takes 2(n-1) steps: the small message's time is latency */
        lat = t_small / (2.0 * (world - 1));
        bus = large / t_large * 2.0 * (world - 1) / world / 1e9;
    }
    if (rank == 0) {
        FILE *f = fopen(out, "w");
        if (!f) {
            fprintf(stderr, "weft-calibrate-cuda: cannot write %s\n", out);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        struct cudaDeviceProp prop;
        const char *name = cudaGetDeviceProperties(&prop, 0) == cudaSuccess ? prop.name : "unknown";
        fprintf(f, "-- written by weft-calibrate-cuda%s: measured on %s\n", quick ? " --quick" : "", name);
        fprintf(f, "return {\n  backend = \"cuda\",\n  precision = \"bf16\",\n  sms = %d,\n", sms);
        fprintf(f, "  gemm = {  -- M, N, K, TFLOP/s (bf16 operands, fp32 accumulation)\n");
        char a[32], b[32], c[32];
        for (int i = 0; i < ns; i++)
            fprintf(f, "    { %.0f, %.0f, %.0f, %s },\n", shape[i][0], shape[i][1], shape[i][2],
                    lua_num(a, sizeof a, shape[i][3]));
        fprintf(f, "  },\n");
        fprintf(f, "  -- TFLOP/s of the useful causal work (forward 2, backward 5 products of T(T+1)/2 x head)\n");
        fprintf(f, "  attention = { head = %d, seq = %d, forward = %s, backward = %s },\n", ahs, aT,
                lua_num(a, sizeof a, 2 * product / af / 1e12), lua_num(b, sizeof b, 5 * product / ab / 1e12));
        if (world >= 2)
            fprintf(f, "  nccl = { gpus = %d, bus_gbs = %s, latency_us = %s },  -- all-reduce, ring\n", world,
                    lua_num(b, sizeof b, bus), lua_num(c, sizeof c, lat * 1e6));
        fprintf(f, "}\n");
        fclose(f);
        printf("weft-calibrate-cuda: %d GEMM shapes, attention %.3g / %.3g ms, ", ns, af * 1e3, ab * 1e3);
        if (world >= 2) printf("NCCL %d ranks %.3g GB/s bus, %.3g us; ", world, bus, lat * 1e6);
        printf("wrote %s\n", out);
    }
    MPI_Finalize();
    return 0;
}
