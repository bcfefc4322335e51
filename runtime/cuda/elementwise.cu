/* elementwise.cu: the embedding lookups, GELU (and the fused linear + GELU's
 * elementwise half), the exact (erf) GELU, residual, position and bias adds
 * (and the W halves of the last two) on the GPU.  Same semantics as
 * runtime/cpu/elementwise.c: backward kernels accumulate.
 *
 * Gradients that several rows add into are summed in a fixed order, no
 * atomics, the same result every run: dwte and dwpe by threads walking the
 * rows in order (the CPU's order of additions), the biases in colsum.cuh's
 * two passes over chunks of rows.
 *
 * Activations and their gradients are in c's storage (storage.cuh): each
 * kernel is a template on it, the tensor-parallel ones (vocabulary
 * embedding, position and bias adds, the collectives' conversions) too.
 *
 * The elementwise kernels, the embeddings' forwards, the position and bias
 * adds and the position gradient are templates on an access A
 * (storage_vec.cuh): 16 bytes of activations per load and store where the
 * host wrapper finds every activation pointer 16-byte aligned and the count
 * (or C) a multiple of the vector width, one element at a time otherwise;
 * each element's arithmetic is the same on both paths, so are the results,
 * bit for bit. */
#include "colsum.cuh"
#include "cuda_rt.h"
#include "gelu_erf_value.h"
#include "gelu_value.h"
#include "kernels_tp.h"
#include "linear_gelu.h"
#include "precision_bits.h"
#include "reduce.cuh"
#include "storage.cuh"
#include "storage_vec.cuh"

#define GRID_STRIDE(i, n) \
    for (long i = blockIdx.x * (long)blockDim.x + threadIdx.x; i < (n); i += (long)gridDim.x * blockDim.x)

/* the bias gradient's term: dout itself (colsum.cuh sums it over the rows) */
template <class A> struct colsum_terms {
    enum { sums = 1 };
    const typename A::raw *dout;
    __device__ void add(long, long at, float (*acc)[A::width]) const {
        float d[A::width];
        A::load(dout, at, d);
#pragma unroll
        for (int e = 0; e < A::width; e++) acc[0][e] += d[e];
    }
};

/* dout in c's activation storage (the GEMM helper's bias gradients), db float */
extern "C" void wf_cuda_colsum_add(wf_ctx *c, float *db, const float *dout, long rows, long C) {
    wf_colsum_out out = { { db, NULL } };
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, dout),
                                    wf_colsum<A>(c, colsum_terms<A>{ wf_act<S>(dout) }, out, rows, C)));
}

/* ---- embedding --------------------------------------------------------- */

/* a chunk of A::width elements lies in one row (C is a multiple of it) */
template <class A>
__global__ static void embed_fwd_kernel(typename A::raw *out, const int32_t *tok, const float *wte,
                                        const float *wpe, long N, int T, int C) {
    WF_GRID_CHUNKS(i, N * C, A::width) {
        long n = i / C;
        int k = (int)(i % C), t = (int)(n % T);
        const float *we = wte + (long)tok[n] * C + k, *pe = wpe + (long)t * C + k;
        float v[A::width];
#pragma unroll
        for (int e = 0; e < A::width; e++) v[e] = we[e] + pe[e];
        A::store(out, i, v);
    }
}

/* dwte[tok[n], k] += dout[n, k] for n in order.  Thread (column k, group g)
 * takes the tokens whose row is g modulo DWTE_GROUPS: groups own disjoint
 * rows, so there is no race, and each row still adds its tokens in order n
 * (the CPU's order).  The 32 lanes of a warp are 32 columns of one group, so
 * the token test is warp-uniform and every lane reads the same token.  (One
 * thread per column walking all N tokens left C/32 warps, each with one
 * dependent read-modify-write of a random wte row at a time in flight: about
 * 10 ms per GPT-2 microbatch; now each walks N/DWTE_GROUPS of them.) */
#define DWTE_GROUPS 64
#define DWTE_GROUPS_PER_BLOCK 8

template <class S>
__global__ static void embed_dwte_kernel(float *dwte, const typename S::raw *dout, const int32_t *tok,
                                         long N, int C, int v_begin, int VL) {
    int k = blockIdx.x * 32 + threadIdx.x;
    int g = blockIdx.y * DWTE_GROUPS_PER_BLOCK + threadIdx.y;
    if (k >= C) return;  /* no barriers or shuffles below */
    for (long n = 0; n < N; n++) {
        int row = tok[n] - v_begin;
        if (row >= 0 && row < VL && row % DWTE_GROUPS == g) dwte[(long)row * C + k] += S::load(dout, n * C + k);
    }
}

template <class S>
static void embed_dwte(cudaStream_t s, float *dwte, const float *dout, const int32_t *tok, long N, int C,
                       int v_begin, int VL) {
    dim3 grid((unsigned)((C + 31) / 32), DWTE_GROUPS / DWTE_GROUPS_PER_BLOCK), block(32, DWTE_GROUPS_PER_BLOCK);
    WF_LAUNCH(embed_dwte_kernel<S>, grid, block, 0, s)(dwte, wf_act<S>(dout), tok, N, C, v_begin, VL);
}

/* one thread per (t, chunk of A::width columns k): dwpe[t, k] += dout[b, t, k]
 * for b in order */
template <class A>
__global__ static void embed_dwpe_kernel(float *dwpe, const typename A::raw *dout, int B, int T, int C) {
    WF_GRID_CHUNKS(i, (long)T * C, A::width) {
        long t = i / C, k = i % C;
        float acc[A::width], d[A::width];
#pragma unroll
        for (int e = 0; e < A::width; e++) acc[e] = dwpe[i + e];
        for (int b = 0; b < B; b++) {
            A::load(dout, ((long)b * T + t) * C + k, d);
#pragma unroll
            for (int e = 0; e < A::width; e++) acc[e] += d[e];
        }
#pragma unroll
        for (int e = 0; e < A::width; e++) dwpe[i + e] = acc[e];
    }
}

extern "C" void wf_embed_fwd(wf_ctx *c, float *out, const int32_t *tok, const float *wte,
                             const float *wpe, int B, int T, int C) {
    long N = (long)B * T;
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, out),
                                    WF_LAUNCH(embed_fwd_kernel<A>, wf_blocks(N * C / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), tok, wte, wpe, N, T, C)));
    wf_cuda_sync(c, "wf_embed_fwd");
}

extern "C" void wf_embed_bwd(wf_ctx *c, float *dwte, float *dwpe, const float *dout,
                             const int32_t *tok, int B, int T, int C) {
    cudaStream_t s = wf_cuda_stream(c);
    WF_BY_STORAGE(c, S, embed_dwte<S>(s, dwte, dout, tok, (long)B * T, C, 0, 0x7fffffff);
                  WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, dout),
                              WF_LAUNCH(embed_dwpe_kernel<A>, wf_blocks((long)T * C / A::width), WF_THREADS, 0, s)(
                                  dwpe, wf_act<S>(dout), B, T, C)));
    wf_cuda_sync(c, "wf_embed_bwd");
}

/* ---- vocabulary-parallel embedding -------------------------------------- */
/* Also the LLaMA family's embedding on one rank (the whole vocabulary, no
 * position table), so it takes the activation storage of c. */

template <class A>
__global__ static void vocab_embed_fwd_kernel(typename A::raw *out, const int32_t *tok, const float *wte_part,
                                              int v_begin, int VL, long N, int C) {
    WF_GRID_CHUNKS(i, N * C, A::width) {
        long n = i / C;
        int row = tok[n] - v_begin;
        const float *we = wte_part + (long)row * C + i % C;
        float v[A::width];
#pragma unroll
        for (int e = 0; e < A::width; e++) v[e] = (row >= 0 && row < VL) ? we[e] : 0.0f;
        A::store(out, i, v);
    }
}

extern "C" void wf_vocab_embed_fwd(wf_ctx *c, float *out, const int32_t *tok,
                                   const float *wte_part, int v_begin, int VL, int N, int C) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, out),
                                    WF_LAUNCH(vocab_embed_fwd_kernel<A>, wf_blocks((long)N * C / A::width),
                                              WF_THREADS, 0, wf_cuda_stream(c))(wf_act<S>(out), tok, wte_part,
                                                                                v_begin, VL, N, C)));
    wf_cuda_sync(c, "wf_vocab_embed_fwd");
}

extern "C" void wf_vocab_embed_bwd(wf_ctx *c, float *dwte_part, const float *dout,
                                   const int32_t *tok, int v_begin, int VL, int N, int C) {
    WF_BY_STORAGE(c, S, embed_dwte<S>(wf_cuda_stream(c), dwte_part, dout, tok, N, C, v_begin, VL));
    wf_cuda_sync(c, "wf_vocab_embed_bwd");
}

/* ---- GELU (tanh approximation) ------------------------------------------- */

/* the formula is runtime/cpu/gelu_value.h's, the CPU backend's */

template <class A>
__global__ static void gelu_fwd_kernel(typename A::raw *out, const typename A::raw *inp, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float x[A::width];
        A::load(inp, i, x);
#pragma unroll
        for (int e = 0; e < A::width; e++) x[e] = wf_gelu_value(x[e]);
        A::store(out, i, x);
    }
}

/* The fused linear + GELU's elementwise half (linear_gelu.h): in 16 bits the
 * pre-activation is rounded before the GELU reads it and the output after,
 * one launch where the unfused ops take three (gelu and two roundings);
 * under fp32 the rounding is the identity and this is gelu_fwd_kernel with
 * pre read back in place. */
template <class A>
__global__ static void gelu_round_fwd_kernel(int precision, typename A::raw *pre, typename A::raw *out, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float x[A::width], y[A::width];
        A::load(pre, i, x);
#pragma unroll
        for (int e = 0; e < A::width; e++) {
            x[e] = wf_hd_round(precision, x[e]);
            y[e] = wf_hd_round(precision, wf_gelu_value(x[e]));
        }
        A::store(pre, i, x);
        A::store(out, i, y);
    }
}

template <class A>
__global__ static void gelu_round_bwd_kernel(int precision, typename A::raw *dpre, const typename A::raw *pre,
                                             const typename A::raw *dout, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float dx[A::width], x[A::width], d[A::width];
        A::load(dpre, i, dx);
        A::load(pre, i, x);
        A::load(dout, i, d);
#pragma unroll
        for (int e = 0; e < A::width; e++) dx[e] = wf_hd_round(precision, dx[e] + wf_gelu_grad(x[e]) * d[e]);
        A::store(dpre, i, dx);
    }
}

extern "C" void wf_gelu_round_fwd(wf_ctx *c, int precision, float *pre, float *out, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, pre, out),
                                    WF_LAUNCH(gelu_round_fwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(precision, wf_act<S>(pre), wf_act<S>(out), n)));
    wf_cuda_sync(c, "wf_gelu_round_fwd");
}

extern "C" void wf_gelu_round_bwd(wf_ctx *c, int precision, float *dpre, const float *pre,
                                  const float *dout, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, dpre, pre, dout),
                                    WF_LAUNCH(gelu_round_bwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(precision, wf_act<S>(dpre), wf_act<S>(pre),
                                                                 wf_act<S>(dout), n)));
    wf_cuda_sync(c, "wf_gelu_round_bwd");
}

/* The elementwise half of wf_linear_dgelu_bwd_input where cuBLASLt's DGELU
 * epilogue does not serve (linear.cu): acc the GEMM's float result, dpre and
 * pre in c's storage; one value per thread (acc is float whatever the
 * storage; in place, acc == dpre, where that is float too). */
template <class S>
__global__ static void dgelu_round_kernel(int precision, typename S::raw *dpre, const typename S::raw *pre,
                                          const float *acc, long n) {
    GRID_STRIDE(i, n) S::store(dpre, i, wf_hd_round(precision, wf_gelu_grad(S::load(pre, i)) * acc[i]));
}

extern "C" void wf_dgelu_round(wf_ctx *c, int precision, float *dpre, const float *pre, const float *acc, long n) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(dgelu_round_kernel<S>, wf_blocks(n), WF_THREADS, 0, wf_cuda_stream(c))(
                            precision, wf_act<S>(dpre), wf_act<S>(pre), acc, n));
    wf_cuda_sync(c, "wf_dgelu_round");
}

extern "C" void wf_gelu_fwd(wf_ctx *c, float *out, const float *inp, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, out, inp),
                                    WF_LAUNCH(gelu_fwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), wf_act<S>(inp), n)));
    wf_cuda_sync(c, "wf_gelu_fwd");
}

/* the unfused backward: the fused one's kernel, rounding nothing (the
 * program rounds dinp itself where activations are floats) */
extern "C" void wf_gelu_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, dinp, inp, dout),
                                    WF_LAUNCH(gelu_round_bwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(WF_FP32, wf_act<S>(dinp), wf_act<S>(inp),
                                                                 wf_act<S>(dout), n)));
    wf_cuda_sync(c, "wf_gelu_bwd");
}

/* ---- GELU (exact, erf) -------------------------------------------------- */

/* The formula is runtime/cpu/gelu_erf_value.h's, the CPU backend's (device
 * erfcf and expf are within a few ulps of glibc's: fp32 rounding apart,
 * tests/gpu/check_kernels.c).  Under act16 both kernels read and write the
 * 16-bit storage through A, rounding each stored value once; the backward
 * adds in fp32 before that rounding, as wf_gelu_bwd does. */

template <class A>
__global__ static void gelu_erf_fwd_kernel(typename A::raw *out, const typename A::raw *inp, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float x[A::width];
        A::load(inp, i, x);
#pragma unroll
        for (int e = 0; e < A::width; e++) x[e] = wf_gelu_erf_value(x[e]);
        A::store(out, i, x);
    }
}

template <class A>
__global__ static void gelu_erf_bwd_kernel(typename A::raw *dinp, const typename A::raw *inp,
                                           const typename A::raw *dout, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float dx[A::width], x[A::width], d[A::width];
        A::load(dinp, i, dx);
        A::load(inp, i, x);
        A::load(dout, i, d);
#pragma unroll
        for (int e = 0; e < A::width; e++) dx[e] = dx[e] + wf_gelu_erf_grad(x[e]) * d[e];
        A::store(dinp, i, dx);
    }
}

extern "C" void wf_gelu_erf_fwd(wf_ctx *c, float *out, const float *inp, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, out, inp),
                                    WF_LAUNCH(gelu_erf_fwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), wf_act<S>(inp), n)));
    wf_cuda_sync(c, "wf_gelu_erf_fwd");
}

extern "C" void wf_gelu_erf_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, dinp, inp, dout),
                                    WF_LAUNCH(gelu_erf_bwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(dinp), wf_act<S>(inp),
                                                                 wf_act<S>(dout), n)));
    wf_cuda_sync(c, "wf_gelu_erf_bwd");
}

/* ---- residual add ------------------------------------------------------- */

template <class A>
__global__ static void add_kernel(typename A::raw *out, const typename A::raw *a, const typename A::raw *b,
                                  long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float x[A::width], y[A::width];
        A::load(a, i, x);
        A::load(b, i, y);
#pragma unroll
        for (int e = 0; e < A::width; e++) x[e] = x[e] + y[e];
        A::store(out, i, x);
    }
}

/* y += x (one input gradient) */
template <class A>
__global__ static void acc_kernel(typename A::raw *y, const typename A::raw *x, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float u[A::width], v[A::width];
        A::load(y, i, u);
        A::load(x, i, v);
#pragma unroll
        for (int e = 0; e < A::width; e++) u[e] = u[e] + v[e];
        A::store(y, i, u);
    }
}

static void acc(wf_ctx *c, float *y, const float *x, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, y, x),
                                    WF_LAUNCH(acc_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(y), wf_act<S>(x), n)));
}

/* y0 stored before y1 is read, in the scalar path's order */
template <class A>
__global__ static void acc2_kernel(typename A::raw *y0, typename A::raw *y1, const typename A::raw *x, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float v[A::width], y[A::width];
        A::load(x, i, v);
        A::load(y0, i, y);
#pragma unroll
        for (int e = 0; e < A::width; e++) y[e] = y[e] + v[e];
        A::store(y0, i, y);
        A::load(y1, i, y);
#pragma unroll
        for (int e = 0; e < A::width; e++) y[e] = y[e] + v[e];
        A::store(y1, i, y);
    }
}

extern "C" void wf_add_fwd(wf_ctx *c, float *out, const float *a, const float *b, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, out, a, b),
                                    WF_LAUNCH(add_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), wf_act<S>(a), wf_act<S>(b), n)));
    wf_cuda_sync(c, "wf_add_fwd");
}

extern "C" void wf_add_bwd(wf_ctx *c, float *da, float *db, const float *dout, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, da, db, dout),
                                    WF_LAUNCH(acc2_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(da), wf_act<S>(db), wf_act<S>(dout), n)));
    wf_cuda_sync(c, "wf_add_bwd");
}

/* ---- position add (after a vocabulary-parallel lookup) ------------------- */

/* a chunk of A::width elements lies in one row (C is a multiple of it) */
template <class A>
__global__ static void pos_add_fwd_kernel(typename A::raw *out, const typename A::raw *in, const float *wpe,
                                          long row0, int rows, int T, int C) {
    WF_GRID_CHUNKS(i, (long)rows * C, A::width) {
        long r = i / C;
        const float *pos = wpe + ((row0 + r) % T) * C + i % C;
        float v[A::width];
        A::load(in, i, v);
#pragma unroll
        for (int e = 0; e < A::width; e++) v[e] = v[e] + pos[e];
        A::store(out, i, v);
    }
}

/* one thread per (position p, column k): the rows at that position, in order */
template <class S>
__global__ static void pos_add_dwpe_kernel(float *dwpe, const typename S::raw *dout, long row0, int rows,
                                           int T, int C) {
    GRID_STRIDE(i, (long)T * C) {
        long p = i / C, k = i % C;
        long first = ((p - row0) % T + T) % T;  /* first row r with (row0 + r) % T == p */
        float acc = dwpe[i];
        for (long r = first; r < rows; r += T) acc += S::load(dout, r * C + k);
        dwpe[i] = acc;
    }
}

extern "C" void wf_pos_add_fwd(wf_ctx *c, float *out, const float *in, const float *wpe, long row0,
                               int rows, int T, int C) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, out, in),
                                    WF_LAUNCH(pos_add_fwd_kernel<A>, wf_blocks((long)rows * C / A::width),
                                              WF_THREADS, 0, wf_cuda_stream(c))(wf_act<S>(out), wf_act<S>(in),
                                                                                wpe, row0, rows, T, C)));
    wf_cuda_sync(c, "wf_pos_add_fwd");
}

extern "C" void wf_pos_add_bwd_input(wf_ctx *c, float *din, const float *dout, int rows, int C) {
    acc(c, din, dout, (long)rows * C);
    wf_cuda_sync(c, "wf_pos_add_bwd_input");
}

extern "C" void wf_pos_add_bwd_weight(wf_ctx *c, float *dwpe, const float *dout, long row0,
                                      int rows, int T, int C) {
    WF_BY_STORAGE(c, S, WF_LAUNCH(pos_add_dwpe_kernel<S>, wf_blocks((long)T * C), WF_THREADS, 0,
                                  wf_cuda_stream(c))(dwpe, wf_act<S>(dout), row0, rows, T, C));
    wf_cuda_sync(c, "wf_pos_add_bwd_weight");
}

extern "C" void wf_pos_add_bwd(wf_ctx *c, float *din, float *dwpe, const float *dout, long row0,
                               int rows, int T, int C) {
    wf_pos_add_bwd_input(c, din, dout, rows, C);
    wf_pos_add_bwd_weight(c, dwpe, dout, row0, rows, T, C);
}

/* ---- bias add (after a row-parallel reduction) ---------------------------- */

/* a chunk of A::width elements lies in one row (C is a multiple of it) */
template <class A>
__global__ static void bias_add_fwd_kernel(typename A::raw *out, const typename A::raw *in, const float *b,
                                           long n, long C) {
    WF_GRID_CHUNKS(i, n, A::width) {
        const float *bias = b + i % C;
        float v[A::width];
        A::load(in, i, v);
#pragma unroll
        for (int e = 0; e < A::width; e++) v[e] = v[e] + bias[e];
        A::store(out, i, v);
    }
}

extern "C" void wf_bias_add_fwd(wf_ctx *c, float *out, const float *in, const float *b, int rows,
                                long C) {
    long n = (long)rows * C;
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(C, out, in),
                                    WF_LAUNCH(bias_add_fwd_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(out), wf_act<S>(in), b, n, C)));
    wf_cuda_sync(c, "wf_bias_add_fwd");
}

extern "C" void wf_bias_add_bwd_weight(wf_ctx *c, float *db, const float *dout, int rows, long C) {
    wf_cuda_colsum_add(c, db, dout, rows, C);
    wf_cuda_sync(c, "wf_bias_add_bwd_weight");
}

extern "C" void wf_bias_add_bwd(wf_ctx *c, float *din, float *db, const float *dout, int rows,
                                long C) {
    acc(c, din, dout, (long)rows * C);
    wf_cuda_colsum_add(c, db, dout, rows, C);
    wf_cuda_sync(c, "wf_bias_add_bwd");
}

/* ---- the tensor-parallel collectives' conversions (kernels_tp.h) ---------- */
/* Storage values to floats and back around an fp32 collective; float
 * pointers carry no alignment promise here beyond the allocator's, so only
 * the storage side takes 16-byte accesses. */

template <class A> __global__ static void widen_kernel(float *dst, const typename A::raw *src, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float v[A::width];
        A::load(src, i, v);
#pragma unroll
        for (int e = 0; e < A::width; e++) dst[i + e] = v[e];
    }
}

/* dst = round(dst + src): the CPU's float add, then its rounding call */
template <class A> __global__ static void add_floats_kernel(typename A::raw *dst, const float *src, long n) {
    WF_GRID_CHUNKS(i, n, A::width) {
        float v[A::width];
        A::load(dst, i, v);
#pragma unroll
        for (int e = 0; e < A::width; e++) v[e] = v[e] + src[i + e];
        A::store(dst, i, v);
    }
}

extern "C" void wf_tp_widen(wf_ctx *c, float *dst, const float *src, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, src),
                                    WF_LAUNCH(widen_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(dst, wf_act<S>(src), n)));
    wf_cuda_sync(c, "wf_tp_widen");
}

extern "C" void wf_tp_narrow(wf_ctx *c, float *dst, const float *src, long n) {
    WF_BY_STORAGE(c, S, wf_narrow_launch<S>(dst, src, n, wf_cuda_stream(c)));
    wf_cuda_sync(c, "wf_tp_narrow");
}

extern "C" void wf_tp_add_floats(wf_ctx *c, float *dst, const float *src, long n) {
    WF_BY_STORAGE(c, S, WF_BY_WIDTH(S, A, wf_vec_ok<S>(n, dst),
                                    WF_LAUNCH(add_floats_kernel<A>, wf_blocks(n / A::width), WF_THREADS, 0,
                                              wf_cuda_stream(c))(wf_act<S>(dst), src, n)));
    wf_cuda_sync(c, "wf_tp_add_floats");
}
