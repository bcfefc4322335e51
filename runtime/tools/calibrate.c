/* weft-calibrate: measures this machine for CPU-backend predictions and
 * writes a cluster file `weft simulate --calibration FILE` reads:
 *   fp32         sgemm TFLOP/s per rank (one thread, as when ranks fill the cores),
 *                on GEMM shapes of a small GPT;
 *   gemm_balance how fast the rate falls for thin shapes (fitted);
 *   hbm_gbs      memory bandwidth per rank (copy);
 *   link_gbs, link_latency_us   MPI point-to-point between two ranks;
 *   dp_bucket_us CPU time a gradient bucket's non-blocking all-reduce adds
 *                in MPI calls, issued and progressed as the runtime does;
 *   optimizer_ns the optimizer step per parameter (AdamW, the gradient
 *                norm's squares, the gradients zeroed), the runtime's loops;
 *   tp_gbs       bus bandwidth of the blocking collectives tensor
 *                parallelism calls (all-reduce, all-gather, reduce-scatter).
 * Run it with two ranks: mpirun -np 2 weft-calibrate -o cluster.lua */
#include <mpi.h>
#include <cblas.h>
#include <errno.h>
#include <omp.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "blas.h"
#include "internal.h"
#include "opt_backend.h"

static double gemm_rate(int M, int N, int K) { return wf_sgemm_rate(M, N, K, 3); }

/* calloc and malloc that stop the job, naming the rank, instead of
 * measuring through a null pointer (every size here is above 0) */
static void *need(void *p, size_t bytes) {
    if (!p) {
        int rank = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &rank);
        fprintf(stderr, "weft-calibrate: rank %d: calloc/malloc: cannot allocate %zu bytes\n", rank, bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}
static void *xcalloc(size_t n, size_t size) { return need(calloc(n, size), n * size); }
static void *xmalloc(size_t bytes) { return need(malloc(bytes), bytes); }

static double copy_gbs(void) {
    size_t n = (size_t)64 << 20;
    char *a = xmalloc(n), *b = xmalloc(n);
    memset(a, 1, n);
    memset(b, 2, n);
    double best = 1e30;
    for (int r = 0; r < 3; r++) {
        double t0 = MPI_Wtime();
        memcpy(b, a, n);
        double t = MPI_Wtime() - t0;
        if (t < best) best = t;
    }
    free(a); free(b);
    return 2.0 * n / best / 1e9;  /* read + write */
}

/* Nanoseconds per element of the runtime's own non-GEMM kernels, forward and
 * backward, at a small GPT's sizes (N = 1024 tokens, C = 128). */
typedef struct { double ln_f, ln_b, gelu_f, gelu_b, add_f, add_b, att_f, att_b, xent_f, xent_b;
                 double linear_f, linear_b; /* GFLOP/s of a linear layer's forward, backward */ } kernel_ns;

#define TIME(call, out)                                   \
    do {                                                  \
        double best_ = 1e30;                              \
        for (int r_ = 0; r_ < 3; r_++) {                  \
            double t0_ = MPI_Wtime();                     \
            call;                                         \
            double t_ = MPI_Wtime() - t0_;                \
            if (t_ < best_) best_ = t_;                   \
        }                                                 \
        (out) = best_;                                    \
    } while (0)

static kernel_ns measure_kernels(double gemm_gflops) {
    /* 64 sequences of 128 tokens: arenas larger than the caches, as in a real step */
    enum { B = 64, T = 128, C = 128, H = 4, V = 4096, N = B * T };
    kernel_ns k;
    float *x = xcalloc((size_t)N * 4 * C, 4), *y = xcalloc((size_t)N * 4 * C, 4), *d = xcalloc((size_t)N * 4 * C, 4);
    float *dx = xcalloc((size_t)N * 4 * C, 4), *w = xcalloc(4 * C, 4), *b = xcalloc(4 * C, 4);
    /* attention keeps B*H*T floats (its log-sum-exp) and needs as many of scratch */
    float *mean = xcalloc(N, 4), *rstd = xcalloc(N, 4), *att = xcalloc((size_t)B * H * T, 4);
    float *scratch = xcalloc((size_t)B * H * T, 4), *dlogits = xcalloc((size_t)N * V, 4), *losses = xcalloc(N, 4);
    float *wte = xcalloc((size_t)V * C, 4), *dwte = xcalloc((size_t)V * C, 4);
    int32_t *tgt = xcalloc(N, 4);
    for (long i = 0; i < (long)N * 4 * C; i++) x[i] = (float)(i % 17) * 0.01f;
    for (int i = 0; i < 4 * C; i++) w[i] = 1.0f;
    double t, n = (double)N * C;
    TIME(wf_layernorm_fwd(NULL, y, mean, rstd, x, w, b, N, C), t); k.ln_f = t / n * 1e9;
    TIME(wf_layernorm_bwd(NULL, dx, w, b, d, x, w, mean, rstd, N, C), t); k.ln_b = t / n * 1e9;
    TIME(wf_gelu_fwd(NULL, y, x, (long)N * 4 * C), t); k.gelu_f = t / (4 * n) * 1e9;
    TIME(wf_gelu_bwd(NULL, dx, x, d, (long)N * 4 * C), t); k.gelu_b = t / (4 * n) * 1e9;
    /* a linear layer as the runtime runs it (bias, transposed backward GEMMs) */
    double lin = 2.0 * N * C * 4 * C;
    TIME(wf_linear_fwd(NULL, y, x, wte, b, N, C, 4 * C), t); k.linear_f = lin / t / 1e9;
    TIME(wf_linear_bwd(NULL, dx, dwte, w, d, x, wte, N, C, 4 * C), t); k.linear_b = 2 * lin / t / 1e9;
    TIME(wf_add_fwd(NULL, y, x, d, (long)n), t); k.add_f = t / n * 1e9;
    TIME(wf_add_bwd(NULL, dx, y, d, (long)n), t); k.add_b = t / n * 1e9;
    double att_elems = (double)B * H * T * T;
    TIME(wf_attention_fwd(NULL, y, att, x, B, T, C, H), t); k.att_f = t / att_elems * 1e9;
    TIME(wf_attention_bwd(NULL, dx, scratch, d, x, y, att, B, T, C, H), t); k.att_b = t / att_elems * 1e9;
    /* the LM head less its GEMMs, per logit */
    double logits = (double)N * V, gemm = 2.0 * N * V * C / (gemm_gflops * 1e9);
    TIME(wf_lmhead_xent_fwd(NULL, dlogits, losses, x, wte, tgt, 1.0f, N, C, V), t);
    k.xent_f = (t - gemm > 0 ? t - gemm : 0) / logits * 1e9;
    TIME(wf_lmhead_xent_bwd(NULL, dx, dwte, dlogits, x, wte, N, C, V), t);
    k.xent_b = (t - 2 * gemm > 0 ? t - 2 * gemm : 0) / logits * 1e9;
    free(x); free(y); free(d); free(dx); free(w); free(b); free(mean); free(rstd); free(att);
    free(scratch); free(dlogits); free(losses); free(wte); free(dwte); free(tgt);
    return k;
}

/* One-way time of an n-byte message between ranks 0 and 1 (ping-pong / 2). */
static double pingpong(int rank, size_t n, int reps) {
    char *buf = xcalloc(n ? n : 1, 1);
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (int i = 0; i < reps; i++) {
        if (rank == 0) {
            MPI_Send(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buf, (int)n, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buf, (int)n, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    double t = (MPI_Wtime() - t0) / reps / 2;
    free(buf);
    return t;
}

static double thread_cpu_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Nanoseconds per parameter of the runtime's optimizer step on one thread:
 * AdamW (opt_host.c), the gradient norm's sum of squares and the gradients
 * zeroed (optim_cpu.c, backend_host.c), over 1M parameters in ranges of
 * 65536 (a small GPT's largest: the loops stay on one thread up to there).
 * Each call the least of ROUNDS in this thread's CPU time, after 64 MiB
 * written (the step's activations pass through the caches before the
 * optimizer runs).  bench/optim_rate: 4.6-4.9 ns here against the 3.2 ns
 * of 36 bytes at the copy rate (AdamW alone 3.6-3.8: its sqrt and divide
 * per value, and its four streams, run below the copy rate). */
static double optimizer_ns(void) {
    enum { N = 1 << 20, RANGE = 65536, ROUNDS = 5 };
    size_t evict_n = (size_t)64 << 20;
    char *evict = xmalloc(evict_n);
    float *w = xcalloc(N, 4), *g = xcalloc(N, 4), *m = xcalloc(N, 4), *v = xcalloc(N, 4);
    wf_opt_range r[N / RANGE];
    for (int k = 0; k < N / RANGE; k++)
        r[k] = (wf_opt_range){ .start = (long)k * RANGE, .n = RANGE, .w = (long)k * RANGE, .g = (long)k * RANGE,
                               .mom = (long)k * RANGE, .decay = 1, .in_norm = 1 };
    for (long i = 0; i < N; i++) w[i] = 0.01f * (float)(i % 7);
    wf_adamw_args a = { .t = { r, N / RANGE, N }, .weights = w, .grads = g, .m = m, .v = v, .b1 = 0.9f,
                        .b2 = 0.95f, .eps = 1e-8f, .step_size = 1e-3f, .inv_bc2_sqrt = 1.0f, .grad_scale = 1.0f,
                        .decay = 1e-4f };
    double best[3] = { 1e30, 1e30, 1e30 };
    volatile double sink = 0;  /* the norm's result kept */
    for (int k = 0; k < ROUNDS; k++)
        for (int part = 0; part < 3; part++) {
            for (long i = 0; i < N; i += 64) g[i] = 1e-3f * (float)(i % 5);
            memset(evict, 1, evict_n);
            double c0 = thread_cpu_s();
            if (part == 0) wf_adamw_host(&a);
            else if (part == 1) sink += wf_backend_sumsq(NULL, &a.t, g);
            else wf_backend_zero(NULL, g, sizeof(float) * N);
            double t = thread_cpu_s() - c0;
            if (t < best[part]) best[part] = t;
        }
    free(evict); free(w); free(g); free(m); free(v);
    return (best[0] + best[1] + best[2]) / N * 1e9;
}

/* Bus bandwidth, GB/s, of the blocking collectives a tensor-parallel group
 * calls (tp.c through coll_mpi.c: MPI_Allreduce, MPI_Allgather,
 * MPI_Reduce_scatter_block), on these two ranks, of a 1 MiB tensor (tiny's
 * 2048 tokens x 128 floats, tp 2 with sp at micro 16), with 64 MiB written
 * before each call, as a step's kernels leave the caches: compiler/cost.h's
 * ring formulas read backwards with the measured latency lat (seconds), so
 * that simulate's formulas give the measured times.  Each the least of REPS
 * after a barrier, the slower rank's.  Open MPI 4.1 here (a test program,
 * 2 ranks, least of 60; the ring formula at the point-to-point 3.93 GB/s in
 * brackets), 512 KiB: all-reduce 184-195 us (134), all-gather 64 (67),
 * reduce-scatter 477 (67); 2 MiB: 712-766 (535), 271-311 (267), 1535
 * (267).  With the caches left hot the reduce-scatter still takes 213-218
 * and 1000-1093 us: it runs far below the ring, more than an all-reduce. */
static void tp_collective_gbs(double lat, double gbs[3]) {
    enum { N = 1 << 18, REPS = 15 };  /* floats of the whole tensor */
    size_t evict_n = (size_t)64 << 20;
    float *a = xcalloc(N, sizeof(float)), *b = xcalloc(N, sizeof(float));
    char *evict = xmalloc(evict_n);
    double best[3] = { 1e30, 1e30, 1e30 }, worst[3];
    for (int r = 0; r < REPS; r++)
        for (int k = 0; k < 3; k++) {
            memset(evict, r + k, evict_n);
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (k == 0) MPI_Allreduce(MPI_IN_PLACE, a, N, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            else if (k == 1) MPI_Allgather(a, N / 2, MPI_FLOAT, b, N / 2, MPI_FLOAT, MPI_COMM_WORLD);
            else MPI_Reduce_scatter_block(b, a, N / 2, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            double t = MPI_Wtime() - t0;
            if (t < best[k]) best[k] = t;
        }
    MPI_Allreduce(best, worst, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    /* two ranks: all-reduce 2 lat + S / B; all-gather, reduce-scatter lat + S / 2B */
    double S = 4.0 * N, moved[3] = { S, S / 2, S / 2 }, steps[3] = { 2, 1, 1 };
    for (int k = 0; k < 3; k++) {
        double t = worst[k] - steps[k] * lat;
        gbs[k] = moved[k] / (t > 1e-9 ? t : 1e-9) / 1e9;
    }
    free(a);
    free(b);
    free(evict);
}

/* One "backward" of the data-parallel pattern the runtime runs
 * (runtime/common/step.c): GAPS compute gaps (the runtime's GELU backward
 * over 1M floats, about 2 ms and 12 MB of memory traffic, as a backward
 * kernel leaves the caches); n buckets of the 4 MiB of gradients started by
 * MPI_Iallreduce in place over the first three quarters of the gaps; after every gap
 * MPI_Test on every bucket's request (wf_progress, coll_mpi.c's mpi_test);
 * then MPI_Wait on each (wf_buckets_wait).  Returns this thread's CPU
 * seconds inside the issue and test calls, where Open MPI moves and sums the
 * data (its non-blocking collectives progress only inside MPI calls); the
 * final waits are left out, as on a loaded machine their CPU time is spent
 * spinning for the other rank. */
static double bucket_pattern(float *g, long total, int n, float *const gap[3], long gap_n) {
    enum { GAPS = 32 };
    MPI_Request *r = xmalloc(sizeof(MPI_Request) * (size_t)n);
    for (int i = 0; i < n; i++) r[i] = MPI_REQUEST_NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    double in_calls = 0;
    int started = 0;
    for (int k = 0; k < GAPS; k++) {
        wf_gelu_bwd(NULL, gap[0], gap[1], gap[2], gap_n);
        double c0 = thread_cpu_s();
        for (; started < n && 4L * started * GAPS < 3L * (k + 1) * n; started++) {
            long lo = total * started / n, hi = total * (started + 1) / n;
            MPI_Iallreduce(MPI_IN_PLACE, g + lo, (int)(hi - lo), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r[started]);
        }
        for (int i = 0; i < n; i++) {
            int done;
            MPI_Test(&r[i], &done, MPI_STATUS_IGNORE);
        }
        in_calls += thread_cpu_s() - c0;
    }
    for (int i = 0; i < n; i++) MPI_Wait(&r[i], MPI_STATUS_IGNORE);
    free(r);
    return in_calls;
}

/* What one more bucket costs: the same gradients in MANY buckets and in
 * FEW, alternated, each the least of its rounds (CPU time, so other load on
 * the machine changes it little); the difference per extra bucket, seconds.
 * The gaps are milliseconds of memory traffic, as the runtime's backward
 * kernels are, so that a bucket stays in flight over several of them and
 * every MPI_Test on it progresses it with cold caches (with gaps of
 * microseconds a bucket completes at once and the test costs nothing).  FEW, not one: a
 * single 4 MiB message takes another path in Open MPI.  Both ranks measure;
 * the larger is kept (the step waits for the slower). */
static double dp_bucket_seconds(void) {
    enum { MANY = 32, FEW = 4, ROUNDS = 7 };
    long total = 1L << 20, gap_n = 1L << 20;
    float *g = xcalloc((size_t)total, sizeof(float)), *gap[3];
    for (int i = 0; i < 3; i++) gap[i] = xcalloc((size_t)gap_n, sizeof(float));
    double many = 1e30, few = 1e30;
    for (int round = 0; round < ROUNDS; round++) {
        double t = bucket_pattern(g, total, MANY, gap, gap_n);
        if (t < many) many = t;
        t = bucket_pattern(g, total, FEW, gap, gap_n);
        if (t < few) few = t;
    }
    free(g);
    for (int i = 0; i < 3; i++) free(gap[i]);
    double per = (many - few) / (MANY - FEW), worst = 0;
    MPI_Allreduce(&per, &worst, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return worst > 0 ? worst : 0;
}

int main(int argc, char **argv) {
    wf_blas_select(argc, argv);
    MPI_Init(&argc, &argv);
    int rank, world;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    const char *out = "cluster.lua";
    for (int i = 1; i + 1 < argc; i++)
        if (strcmp(argv[i], "-o") == 0) out = argv[i + 1];
    openblas_set_num_threads(1);
    /* large shapes give the peak; a thin one fixes how fast it falls */
    double big = 0;
    int shapes[][3] = { { 1024, 768, 256 }, { 1024, 1024, 256 }, { 1024, 256, 1024 }, { 2048, 1024, 1024 } };
    for (int s = 0; s < 4; s++) {
        double r = gemm_rate(shapes[s][0], shapes[s][1], shapes[s][2]);
        if (r > big) big = r;
    }
    double thin = gemm_rate(128, 128, 32);
    /* efficiency = I / (I + balance) with I = 1 / (2 (1/M + 1/N + 1/K)) */
    double intensity = 1.0 / (2.0 * (1.0 / 128 + 1.0 / 128 + 1.0 / 32)), ratio = thin / big;
    double balance = ratio > 0 && ratio < 1 ? intensity * (1 - ratio) / ratio : 1.0;
    /* what more threads buy a rank alone on the node (hyperthreads buy little):
     * rank 0 measures while the others wait without spinning */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    double alone = big;
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    if (rank == 0) {
        openblas_set_num_threads((int)cores);
        alone = 0;
        for (int s = 0; s < 4; s++) {
            double r = gemm_rate(shapes[s][0], shapes[s][1], shapes[s][2]);
            if (r > alone) alone = r;
        }
        openblas_set_num_threads(1);
    }
    for (int done = 0; !done;) {
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (!done) usleep(1000);
    }
    double hbm = copy_gbs();
    omp_set_num_threads(1);
    kernel_ns kn = measure_kernels(big);
    double optim_ns = optimizer_ns();
    double lat = 0, gbs = 0;
    if (world >= 2) {
        lat = pingpong(rank, 8, 2000);
        double big_t = pingpong(rank, (size_t)16 << 20, 10);
        gbs = (16 << 20) / (big_t - lat) / 1e9;
    }
    double bucket = world >= 2 ? dp_bucket_seconds() : 0;
    double tp[3] = { 0, 0, 0 };
    if (world == 2) tp_collective_gbs(lat, tp);
    if (rank == 0) {
        /* a temporary sibling, renamed over out only once whole: a failed
         * run leaves the previous cluster file as it was */
        char tmp[4096];
        snprintf(tmp, sizeof tmp, "%s.tmp-%d", out, (int)getpid());
        FILE *f = fopen(tmp, "w");
        if (!f) { fprintf(stderr, "weft-calibrate: rank 0: cannot write %s: %s\n", tmp, strerror(errno)); MPI_Abort(MPI_COMM_WORLD, 1); }
        fprintf(f, "-- written by weft-calibrate: this machine's CPU backend, per rank\n");
        fprintf(f, "return {\n  name = \"CPU\",\n  fp32 = %.5f,          -- sgemm TFLOP/s, one thread\n", big / 1e3);
        fprintf(f, "  gemm_balance = %.2f,  -- efficiency I / (I + balance)\n", balance);
        fprintf(f, "  hbm_gbs = %.2f,\n  link_gbs = %.3f,\n  link_latency_us = %.3f,\n", hbm,
                world >= 2 ? gbs : 10.0, world >= 2 ? lat * 1e6 : 1.0);
        if (world >= 2)
            fprintf(f, "  dp_bucket_us = %.2f,  -- CPU per extra dp bucket in MPI calls (issue, progress)\n",
                    bucket * 1e6);
        if (world == 2)
            fprintf(f, "  tp_gbs = { allreduce = %.3f, allgather = %.3f, reduce_scatter = %.3f },"
                       "  -- bus GB/s, blocking, 1 MiB, cold caches\n", tp[0], tp[1], tp[2]);
        fprintf(f, "  optimizer_ns = %.3f,  -- the optimizer step per parameter (AdamW, norm, zeroing), one thread\n",
                optim_ns);
        fprintf(f, "  cores = %ld,            -- a rank alone on the node gets them all\n", cores);
        fprintf(f, "  thread_speedup = %.2f,  -- sgemm with all cores over one thread\n", alone / big);
        fprintf(f, "  -- the runtime's own kernels, ns per element (forward, backward), one thread\n");
        fprintf(f, "  layernorm = { %.4f, %.4f },\n  gelu = { %.4f, %.4f },\n  add = { %.4f, %.4f },\n",
                kn.ln_f, kn.ln_b, kn.gelu_f, kn.gelu_b, kn.add_f, kn.add_b);
        fprintf(f, "  attention = { %.4f, %.4f },  -- per score (B H T T), GEMMs included\n",
                kn.att_f, kn.att_b);
        fprintf(f, "  xent = { %.4f, %.4f },       -- per logit, GEMMs excluded\n", kn.xent_f, kn.xent_b);
        fprintf(f, "  linear = { %.2f, %.2f },     -- GFLOP/s of a linear layer (1024 x 128 -> 512)\n}\n",
                kn.linear_f, kn.linear_b);
        int bad = ferror(f);
        if (fclose(f) != 0 || bad || rename(tmp, out) != 0) {
            fprintf(stderr, "weft-calibrate: rank 0: cannot write %s: %s\n", out, strerror(errno));
            remove(tmp);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        printf("sgemm %.1f GFLOP/s (thin shapes %.1f), copy %.1f GB/s, MPI %.2f GB/s, %.2f us, %.2f us a dp bucket, "
               "optimizer %.2f ns a parameter; tp collectives (bus GB/s) all-reduce %.2f, all-gather %.2f, "
               "reduce-scatter %.2f; wrote %s\n", big, thin, hbm, gbs, lat * 1e6, bucket * 1e6, optim_ns, tp[0], tp[1], tp[2], out);
    }
    MPI_Finalize();
    return 0;
}
