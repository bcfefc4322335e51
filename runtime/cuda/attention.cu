/* attention.cu: causal self-attention that never materializes T x T
 * (flash-attention style tiling, fp32 arithmetic).
 *
 * Forward walks the key tiles of each query tile with an online softmax and
 * saves only the log-sum-exp of each query row's scaled scores in `att`
 * (B*H*T floats; the CPU backend keeps its (B, H, T, T) probabilities there,
 * so the compiler sizes that buffer per backend).  Exponentials are base 2
 * (exp2f is a few instructions cheaper than expf): scores are scaled by
 * log2(e) / sqrt(hs), and the saved log-sum-exp is in base 2 too.
 *
 * Backward recomputes the probabilities tile by tile from q, k and the
 * log-sum-exp.  Both gradient kernels need D_i = rowsum(P * dP) per query
 * row, which equals dout_i . out_i (out_i = sum_j P_j v_j), so, as
 * FlashAttention-2 does, it comes from the forward's output:
 *
 *   D kernel     a warp per (b, t, h) row: D = dout . out in fp32 from the
 *                stored values (rounded to 16 bits in bf16 / fp16 plans, so
 *                D carries that rounding), lanes over the columns and a
 *                butterfly, a fixed order; into `scratch` (B*H*T floats).
 *                It runs before the tensor-core kernels too;
 *   dq kernel    one block per query tile, over its key tiles:
 *                dq = scale sum_j P_j (dP_j - D) k_j;
 *   dk/dv kernel one block per key tile, over its query tiles: dk and dv,
 *                with the same D (same stream, so it is complete).
 *
 * (Before out was an argument, the dq kernel summed D = sum_j P_j dP_j in
 * the same pass and formed dq as scale (sum_j P_j dP_j k_j - D sum_j P_j k_j):
 * two running sums of 16 floats per thread instead of one; ptxas (sm_90)
 * gave it 121-128 registers and spills at HS 32..128, now 105-119 and none.)
 *
 * Neither kernel needs atomics: every gradient element has one owner thread,
 * which sums in a fixed order, so results do not depend on scheduling.
 * Tiles wholly above the diagonal are never visited.
 *
 * Layout (HS = head size rounded up to 16, 32, 64, 128, 192 or 256): a
 * block has 256 threads, G of them per row (query row in forward and dq, key
 * row in dk/dv), each owning NC float4 chunks of the row (chunk c of thread g
 * is floats [4(g + cG), 4(g + cG) + 4)): dot products are G partial sums
 * and a butterfly over the G lanes.  Up to HS 128, NC = 4 and G = HS/16;
 * past it G stays 16 (a half warp: the butterfly's lanes) and NC = HS/64
 * (3 at 192, 4 at 256), so a thread's registers are never more than at 128.
 * The other operand's tile, BT = 256/G rows of HS floats (16 past 128), sits
 * in shared memory (at most 32 KiB for two tiles), read as float4: the lanes
 * of a warp read one row, G consecutive chunks, so reads are broadcasts
 * without bank conflicts.  Columns hs..HS are zero.  Head sizes over 128
 * (160 in the 530B and 1T GPTs) take 16-row tiles, fp32 arithmetic, in every plan.
 *
 * bf16 and fp16 plans with a head size that is a multiple of 16 (at most
 * 128) run the tensor-core kernels of attention_tc.cu instead, same contract.
 *
 * qkv rows are 3C wide: head h of q is columns [h*hs, (h+1)*hs), k and v are
 * C and 2C further; dqkv has the same layout.  The kernels take the heads'
 * places as a flash_heads (separate q, k, v, strides, and query head h
 * reading key/value head h / group), so the LLaMA family's grouped-query
 * attention (wf_gqa_attention_*, at the end) runs on them too: its dk/dv
 * kernel sums over the group's query heads in a fixed order.
 *
 * Activation storage (storage.cuh): q, k, v, out, dout and dq, dk, dv are
 * in c's storage, a template argument S of every kernel (16-bit values are
 * loaded as floats into the same registers and tiles, stored rounded, the
 * gradients read, added to in fp32 and stored rounded); lse and D stay
 * float.  A 16-bit plan reaches these kernels only with a head size the
 * tensor-core kernels refuse. */
#include <stdio.h>

#include "attention_tc.h"
#include "cuda_rt.h"
#include "reduce.cuh"

#define FLASH_THREADS 256
#define FLASH_MAX_HS 256

template <int HS> struct flash_tile {
    static constexpr int NC = HS <= 128 ? 4 : HS / 64;  /* float4 chunks per thread */
    static constexpr int R = 4 * NC;                    /* floats of a row per thread */
    static constexpr int G = HS / R;                    /* threads per row (at most 16) */
    static constexpr int BT = FLASH_THREADS / G;        /* rows per tile */
    static constexpr int ROW4 = HS / 4;                 /* float4 per tile row */
    static_assert(G * R == HS && (G & (G - 1)) == 0 && G <= 16 && BT >= 16,
                  "a row's threads are a power of two inside a half warp; a tile holds a key chunk");
};

/* Sum over the G lanes of a row group; every lane gets the same bits
 * (each butterfly level adds the same two numbers, in either order). */
template <int G> __device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int o = G / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* This thread's R floats of row `row` (T rows, `ld` apart) into r[], zeros
 * past hs or past the last row. */
template <int HS, class S>
__device__ __forceinline__ void load_row_part(float *r, const typename S::raw *base, int row, int T, long ld,
                                              int hs, int g) {
    constexpr int G = flash_tile<HS>::G;
#pragma unroll
    for (int c = 0; c < flash_tile<HS>::NC; c++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int d = 4 * (g + c * G) + e;
            r[4 * c + e] = row < T && d < hs ? S::load(base, (long)row * ld + d) : 0.0f;
        }
}

/* r[] . (tile row j), this thread's part */
template <int HS>
__device__ __forceinline__ float dot_part(const float *r, const float4 *tile, int j, int g) {
    constexpr int G = flash_tile<HS>::G;
    float s = 0.0f;
#pragma unroll
    for (int c = 0; c < flash_tile<HS>::NC; c++) {
        float4 t = tile[j * flash_tile<HS>::ROW4 + g + c * G];
        s += r[4 * c] * t.x + r[4 * c + 1] * t.y + r[4 * c + 2] * t.z + r[4 * c + 3] * t.w;
    }
    return s;
}

/* acc[] += a * (tile row j), this thread's part */
template <int HS>
__device__ __forceinline__ void axpy_part(float *acc, float a, const float4 *tile, int j, int g) {
    constexpr int G = flash_tile<HS>::G;
#pragma unroll
    for (int c = 0; c < flash_tile<HS>::NC; c++) {
        float4 t = tile[j * flash_tile<HS>::ROW4 + g + c * G];
        acc[4 * c] += a * t.x;
        acc[4 * c + 1] += a * t.y;
        acc[4 * c + 2] += a * t.z;
        acc[4 * c + 3] += a * t.w;
    }
}

/* Rows [row0, row0 + BT) of a (T, ld) matrix, hs wide, into a (BT, HS)
 * shared tile; coalesced along the row, zeros outside. */
template <int HS, class S>
__device__ __forceinline__ void load_tile(float4 *tile, const typename S::raw *base, int row0, int T, long ld,
                                          int hs) {
    constexpr int BT = flash_tile<HS>::BT;
    float *t = (float *)tile;
    for (int idx = threadIdx.x; idx < BT * HS; idx += FLASH_THREADS) {
        int r = idx / HS, d = idx % HS, row = row0 + r;
        t[idx] = row < T && d < hs ? S::load(base, (long)row * ld + d) : 0.0f;
    }
}

/* First and last row (in the tile) of this thread's warp: on the diagonal
 * tile a warp skips the keys after its last query row (forward, dq) or the
 * queries before its first key (dk/dv).  The bounds are warp-uniform, so the
 * warp's shuffles stay converged. */
template <int HS> __device__ __forceinline__ int warp_first_row() {
    return (int)(threadIdx.x / 32) * (32 / flash_tile<HS>::G);
}
template <int HS> __device__ __forceinline__ int warp_last_row() {
    return warp_first_row<HS>() + 32 / flash_tile<HS>::G - 1;
}

/* Keys per online-softmax update: scores of a chunk are kept in registers,
 * then the running max and the output are rescaled once per chunk. */
#define FLASH_KC 16

/* The heads' places: struct flash_heads (attention_tc.h). */

/* grid (tiles, B*H); block FLASH_THREADS.  Query tile nT-1-blockIdx.x (the
 * longest first), key tiles 0..diagonal. */
template <int HS, class S>
__global__ void __launch_bounds__(FLASH_THREADS, 2)
flash_fwd_kernel(typename S::raw *out, float *lse, flash_heads a, int T, float scale2) {
    constexpr int G = flash_tile<HS>::G, BT = flash_tile<HS>::BT;
    __shared__ float4 ks[BT * HS / 4];
    __shared__ float4 vs[BT * HS / 4];
    int n_tiles = (T + BT - 1) / BT, qt = n_tiles - 1 - (int)blockIdx.x;
    int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, kv = h / a.group, hs = a.hs;
    const typename S::raw *q = flash_q<S>(a, b, h, T);
    const typename S::raw *k = flash_k<S>(a, b, kv, T);
    const typename S::raw *v = flash_v<S>(a, b, kv, T);
    int g = threadIdx.x % G, i = qt * BT + (int)threadIdx.x / G;

    float qr[flash_tile<HS>::R], o[flash_tile<HS>::R];
    load_row_part<HS, S>(qr, q, i, T, a.ldq, hs, g);
#pragma unroll
    for (int d = 0; d < flash_tile<HS>::R; d++) o[d] = 0.0f;
    float m = -INFINITY, l = 0.0f;

    for (int kt = 0; kt <= qt; kt++) {
        __syncthreads(); /* the previous tiles are consumed */
        load_tile<HS, S>(ks, k, kt * BT, T, a.ldk, hs);
        load_tile<HS, S>(vs, v, kt * BT, T, a.ldv, hs);
        __syncthreads();
        int jend = kt == qt ? warp_last_row<HS>() + 1 : BT;
        for (int j0 = 0; j0 < jend; j0 += FLASH_KC) {
            float s[FLASH_KC], mc = -INFINITY;
#pragma unroll
            for (int jj = 0; jj < FLASH_KC; jj++) {
                s[jj] = group_sum<G>(dot_part<HS>(qr, ks, j0 + jj, g)) * scale2;
                if (kt * BT + j0 + jj > i) s[jj] = -INFINITY; /* the future */
                mc = fmaxf(mc, s[jj]);
            }
            /* key 0 is in the first chunk of every row, so m is finite from
             * then on; a chunk wholly in the future leaves it unchanged */
            float mn = fmaxf(m, mc), alpha = exp2f(m - mn);
            l *= alpha;
#pragma unroll
            for (int d = 0; d < flash_tile<HS>::R; d++) o[d] *= alpha;
#pragma unroll
            for (int jj = 0; jj < FLASH_KC; jj++) {
                float p = exp2f(s[jj] - mn);
                l += p;
                axpy_part<HS>(o, p, vs, j0 + jj, g);
            }
            m = mn;
        }
    }
    if (i >= T) return;
    float inv = 1.0f / l;
    long ldo = (long)a.H * hs;
    typename S::raw *orow = out + ((long)b * T + i) * ldo + (long)h * hs;
#pragma unroll
    for (int c = 0; c < flash_tile<HS>::NC; c++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int d = 4 * (g + c * G) + e;
            if (d < hs) S::store(orow, d, o[4 * c + e] * inv);
        }
    if (g == 0) lse[(long)bh * T + i] = m + log2f(l);
}

/* D_i = dout_i . out_i per (b, query head, t) row into dsum ((b*H + h)*T + t):
 * one warp per row, lane l summing columns l, l + 32, ... in order, then a
 * butterfly (every lane the same bits).  grid ceil(rows / 8), block 256. */
#define FLASH_D_ROWS (FLASH_THREADS / 32)
template <class S>
__global__ void __launch_bounds__(FLASH_THREADS)
flash_bwd_d_kernel(float *dsum, const typename S::raw *dout, const typename S::raw *out, int H, int hs, int T,
                   long rows) {
    long row = (long)blockIdx.x * FLASH_D_ROWS + (long)threadIdx.x / 32; /* (b*T + t)*H + h */
    if (row >= rows) return; /* warp-uniform */
    int lane = (int)threadIdx.x % 32;
    long bt = row / H, at = bt * ((long)H * hs) + (row % H) * (long)hs;
    float s = 0.0f;
    for (int d = lane; d < hs; d += 32) s += S::load(dout, at + d) * S::load(out, at + d);
#pragma unroll
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) {
        long b = bt / T, t = bt % T;
        dsum[(b * H + row % H) * T + t] = s;
    }
}

/* dq per query row, over the key tiles 0..diagonal (grid and order as
 * forward).  With P = exp(S - lse) (in base 2 as forward), dP_j = dout . v_j
 * and D from flash_bwd_d_kernel:
 *   dq = scale sum_j P_j (dP_j - D) k_j. */
template <int HS, class S>
__global__ void __launch_bounds__(FLASH_THREADS, 2)
flash_bwd_dq_kernel(const float *dsum, const typename S::raw *dout, const float *lse, flash_heads a, int T,
                    float scale, float scale2) {
    constexpr int G = flash_tile<HS>::G, BT = flash_tile<HS>::BT;
    __shared__ float4 ks[BT * HS / 4];
    __shared__ float4 vs[BT * HS / 4];
    int n_tiles = (T + BT - 1) / BT, qt = n_tiles - 1 - (int)blockIdx.x;
    int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, kv = h / a.group, hs = a.hs;
    long ldo = (long)a.H * hs;
    const typename S::raw *q = flash_q<S>(a, b, h, T);
    const typename S::raw *k = flash_k<S>(a, b, kv, T);
    const typename S::raw *v = flash_v<S>(a, b, kv, T);
    const typename S::raw *dy = flash_dout<S>(a, dout, b, h, T);
    int g = threadIdx.x % G, i = qt * BT + (int)threadIdx.x / G;

    float qr[flash_tile<HS>::R], dyr[flash_tile<HS>::R], dqr[flash_tile<HS>::R];
    load_row_part<HS, S>(qr, q, i, T, a.ldq, hs, g);
    load_row_part<HS, S>(dyr, dy, i, T, ldo, hs, g);
#pragma unroll
    for (int d = 0; d < flash_tile<HS>::R; d++) dqr[d] = 0.0f;
    float li = i < T ? lse[(long)bh * T + i] : 0.0f, D = i < T ? dsum[(long)bh * T + i] : 0.0f;

    for (int kt = 0; kt <= qt; kt++) {
        __syncthreads();
        load_tile<HS, S>(ks, k, kt * BT, T, a.ldk, hs);
        load_tile<HS, S>(vs, v, kt * BT, T, a.ldv, hs);
        __syncthreads();
        int jend = kt == qt ? warp_last_row<HS>() + 1 : BT;
#pragma unroll 1
        for (int jj = 0; jj < jend; jj++) {
            float s = group_sum<G>(dot_part<HS>(qr, ks, jj, g)) * scale2;
            float dp = group_sum<G>(dot_part<HS>(dyr, vs, jj, g));
            float p = kt * BT + jj <= i ? exp2f(s - li) : 0.0f;
            axpy_part<HS>(dqr, p * (dp - D), ks, jj, g);
        }
    }
    if (i >= T) return;
    typename S::raw *dq = reinterpret_cast<typename S::raw *>(a.dq) + ((long)b * T + i) * a.ldq + (long)h * hs;
#pragma unroll
    for (int c = 0; c < flash_tile<HS>::NC; c++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int d = 4 * (g + c * G) + e;
            if (d < hs) S::store(dq, d, S::load(dq, d) + scale * dqr[4 * c + e]);
        }
}

/* dk and dv per key row of one key/value head, over the `group` query heads
 * that read it (in order) and for each over the query tiles diagonal..last.
 * grid (tiles, B*KVH): key tile blockIdx.x, so tile 0 (the most query tiles)
 * starts first.  A thread owns its key row's gradients across the whole
 * group: the group's sum needs no atomics and has a fixed order. */
template <int HS, class S>
__global__ void __launch_bounds__(FLASH_THREADS, 2)
flash_bwd_dkdv_kernel(const float *dsum, const typename S::raw *dout, const float *lse, flash_heads a, int T,
                      float scale, float scale2) {
    constexpr int G = flash_tile<HS>::G, BT = flash_tile<HS>::BT;
    __shared__ float4 qs[BT * HS / 4];
    __shared__ float4 dys[BT * HS / 4];
    __shared__ float ls[BT], Ds[BT];
    int n_tiles = (T + BT - 1) / BT, kt = (int)blockIdx.x;
    int KVH = a.H / a.group, b = blockIdx.y / KVH, kv = blockIdx.y % KVH, hs = a.hs;
    long ldo = (long)a.H * hs;
    const typename S::raw *k = flash_k<S>(a, b, kv, T);
    const typename S::raw *v = flash_v<S>(a, b, kv, T);
    int g = threadIdx.x % G, j = kt * BT + (int)threadIdx.x / G;

    float kr[flash_tile<HS>::R], vr[flash_tile<HS>::R], dk[flash_tile<HS>::R], dv[flash_tile<HS>::R];
    load_row_part<HS, S>(kr, k, j, T, a.ldk, hs, g);
    load_row_part<HS, S>(vr, v, j, T, a.ldv, hs, g);
#pragma unroll
    for (int d = 0; d < flash_tile<HS>::R; d++) dk[d] = dv[d] = 0.0f;

    for (int h = kv * a.group; h < (kv + 1) * a.group; h++) {
        long bh = (long)b * a.H + h;
        const typename S::raw *q = flash_q<S>(a, b, h, T);
        const typename S::raw *dy = flash_dout<S>(a, dout, b, h, T);
        for (int qt = kt; qt < n_tiles; qt++) {
            __syncthreads();
            load_tile<HS, S>(qs, q, qt * BT, T, a.ldq, hs);
            load_tile<HS, S>(dys, dy, qt * BT, T, ldo, hs);
            for (int r = threadIdx.x; r < BT; r += FLASH_THREADS) {
                int i = qt * BT + r;
                ls[r] = i < T ? lse[bh * T + i] : 0.0f;
                Ds[r] = i < T ? dsum[bh * T + i] : 0.0f;
            }
            __syncthreads();
#pragma unroll 2
            for (int ii = qt == kt ? warp_first_row<HS>() : 0; ii < BT; ii++) {
                int i = qt * BT + ii;
                float s = group_sum<G>(dot_part<HS>(kr, qs, ii, g)) * scale2;
                float dp = group_sum<G>(dot_part<HS>(vr, dys, ii, g));
                float p = j <= i && i < T ? exp2f(s - ls[ii]) : 0.0f;
                axpy_part<HS>(dv, p, dys, ii, g);
                axpy_part<HS>(dk, p * (dp - Ds[ii]), qs, ii, g);
            }
        }
    }
    if (j >= T) return;
    typename S::raw *dkrow = reinterpret_cast<typename S::raw *>(a.dk) + ((long)b * T + j) * a.ldk + (long)kv * hs;
    typename S::raw *dvrow = reinterpret_cast<typename S::raw *>(a.dv) + ((long)b * T + j) * a.ldv + (long)kv * hs;
#pragma unroll
    for (int c = 0; c < flash_tile<HS>::NC; c++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            int d = 4 * (g + c * G) + e;
            if (d < hs) {
                S::store(dkrow, d, S::load(dkrow, d) + scale * dk[4 * c + e]);
                S::store(dvrow, d, S::load(dvrow, d) + dv[4 * c + e]);
            }
        }
}

/* The smallest instance that holds hs; 0 past FLASH_MAX_HS. */
static int flash_hs(int hs) {
    return hs <= 16 ? 16 : hs <= 32 ? 32 : hs <= 64 ? 64 : hs <= 128 ? 128 : hs <= 192 ? 192 : hs <= 256 ? 256 : 0;
}

static void flash_check_heads(wf_ctx *c, const char *call, int B, int H, int KVH, int hs) {
    char msg[112];
    if (H < 1 || KVH < 1 || H % KVH != 0 || hs < 1 || flash_hs(hs) == 0) {
        snprintf(msg, sizeof msg, "head size %d, %d query heads on %d key/value heads: the CUDA "
                 "attention takes head sizes 1..%d and KVH dividing H", hs, H, KVH, FLASH_MAX_HS);
        wf_cuda_fail(c, call, WF_CUDA_WHERE, msg);
    }
    if ((long)B * H > 65535) { /* the grid's y dimension */
        snprintf(msg, sizeof msg, "B %d x H %d heads: the CUDA attention takes at most 65535", B, H);
        wf_cuda_fail(c, call, WF_CUDA_WHERE, msg);
    }
}

static void flash_check_shape(wf_ctx *c, const char *call, int B, int C, int H) {
    char msg[96];
    if (H < 1 || C % H != 0) {
        snprintf(msg, sizeof msg, "C %d is not a multiple of H %d heads", C, H);
        wf_cuda_fail(c, call, WF_CUDA_WHERE, msg);
    }
    flash_check_heads(c, call, B, H, H, C / H);
}

#define FLASH_LOG2E 1.4426950408889634f

/* A kernel's instance for the head size and storage (WF_LAUNCH takes one
 * macro argument, so the two template arguments come through a macro) */
#define FLASH_INSTANCE(kernel) kernel<HS, S>

template <int HS, class S>
static void flash_fwd(wf_ctx *c, float *out, float *lse, const flash_heads &a, int B, int T) {
    constexpr int BT = flash_tile<HS>::BT;
    dim3 grid((T + BT - 1) / BT, B * a.H);
    float scale2 = FLASH_LOG2E / sqrtf((float)a.hs);
    WF_LAUNCH(FLASH_INSTANCE(flash_fwd_kernel), grid, FLASH_THREADS, 0, wf_cuda_stream(c))(wf_act<S>(out), lse,
                                                                                         a, T, scale2);
}

/* D = dout . out per (b, query head, t) into dsum, before either backward's
 * gradient kernels (same stream) */
template <class S>
static void flash_bwd_d(wf_ctx *c, float *dsum, const float *dout, const float *out, const flash_heads &a,
                        int B, int T) {
    long rows = (long)B * T * a.H;
    WF_LAUNCH(flash_bwd_d_kernel<S>, (unsigned)((rows + FLASH_D_ROWS - 1) / FLASH_D_ROWS), FLASH_THREADS, 0,
              wf_cuda_stream(c))(dsum, wf_act<S>(dout), wf_act<S>(out), a.H, a.hs, T, rows);
}

template <int HS, class S>
static void flash_bwd(wf_ctx *c, const float *dsum, const float *dout, const float *lse, const flash_heads &a,
                      int B, int T) {
    constexpr int BT = flash_tile<HS>::BT;
    dim3 grid((T + BT - 1) / BT, B * a.H), grid_kv((T + BT - 1) / BT, B * (a.H / a.group));
    float scale = 1.0f / sqrtf((float)a.hs), scale2 = FLASH_LOG2E / sqrtf((float)a.hs);
    cudaStream_t s = wf_cuda_stream(c);
    WF_LAUNCH(FLASH_INSTANCE(flash_bwd_dq_kernel), grid, FLASH_THREADS, 0, s)(dsum, wf_act<S>(dout), lse, a, T,
                                                                             scale, scale2);
    WF_LAUNCH(FLASH_INSTANCE(flash_bwd_dkdv_kernel), grid_kv, FLASH_THREADS, 0, s)(dsum, wf_act<S>(dout), lse, a,
                                                                                  T, scale, scale2);
}

template <class S>
static void flash_fwd_hs(wf_ctx *c, float *out, float *lse, const flash_heads &a, int B, int T) {
    switch (flash_hs(a.hs)) {
    case 16: flash_fwd<16, S>(c, out, lse, a, B, T); break;
    case 32: flash_fwd<32, S>(c, out, lse, a, B, T); break;
    case 64: flash_fwd<64, S>(c, out, lse, a, B, T); break;
    case 128: flash_fwd<128, S>(c, out, lse, a, B, T); break;
    case 192: flash_fwd<192, S>(c, out, lse, a, B, T); break;
    default: flash_fwd<256, S>(c, out, lse, a, B, T); break;
    }
}

template <class S>
static void flash_bwd_hs(wf_ctx *c, const float *dsum, const float *dout, const float *lse, const flash_heads &a,
                         int B, int T) {
    switch (flash_hs(a.hs)) {
    case 16: flash_bwd<16, S>(c, dsum, dout, lse, a, B, T); break;
    case 32: flash_bwd<32, S>(c, dsum, dout, lse, a, B, T); break;
    case 64: flash_bwd<64, S>(c, dsum, dout, lse, a, B, T); break;
    case 128: flash_bwd<128, S>(c, dsum, dout, lse, a, B, T); break;
    case 192: flash_bwd<192, S>(c, dsum, dout, lse, a, B, T); break;
    default: flash_bwd<256, S>(c, dsum, dout, lse, a, B, T); break;
    }
}

/* p moved by n elements of the storage S (an activation's address as rt.h's float *) */
template <class S> static const float *storage_at(const float *p, long n) {
    return reinterpret_cast<const float *>(wf_act<S>(p) + n);
}
template <class S> static float *storage_at(float *p, long n) {
    return reinterpret_cast<float *>(wf_act<S>(p) + n);
}

/* GPT-2's packed (B*T, 3C) rows: q, k, v and their gradients C apart. */
template <class S>
static flash_heads packed_heads(const float *qkv, float *dqkv, int C, int H) {
    flash_heads a;
    a.q = qkv;
    a.k = storage_at<S>(qkv, C);
    a.v = storage_at<S>(qkv, 2L * C);
    a.dq = dqkv;
    a.dk = dqkv ? storage_at<S>(dqkv, C) : NULL;
    a.dv = dqkv ? storage_at<S>(dqkv, 2L * C) : NULL;
    a.ldq = a.ldk = a.ldv = 3L * C;
    a.H = H;
    a.group = 1;
    a.hs = C / H;
    return a;
}

/* LLaMA's grouped-query layout (rt.h): qk rows hold the H query heads then
 * the KVH key heads, v rows the KVH value heads. */
template <class S>
static flash_heads gqa_heads(const float *qk, const float *v, float *dqk, float *dv, int H, int KVH,
                             int hd) {
    flash_heads a;
    a.q = qk;
    a.k = storage_at<S>(qk, (long)H * hd);
    a.v = v;
    a.dq = dqk;
    a.dk = dqk ? storage_at<S>(dqk, (long)H * hd) : NULL;
    a.dv = dv;
    a.ldq = a.ldk = (long)(H + KVH) * hd;
    a.ldv = (long)KVH * hd;
    a.H = H;
    a.group = H / KVH;
    a.hs = hd;
    return a;
}

/* att: the base-2 log-sum-exp of each (b, h, t) row's scaled scores, B*H*T floats. */
extern "C" void wf_attention_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T,
                                 int C, int H) {
    flash_check_shape(c, "wf_attention_fwd", B, C, H);
    WF_BY_STORAGE(c, S, {
        flash_heads a = packed_heads<S>(qkv, NULL, C, H);
        if (wf_attention_tc_takes(c, a.hs)) /* bf16 / fp16 plans: tensor cores (attention_tc.cu) */
            wf_attention_tc_fwd(c, out, att, a, B, T);
        else
            flash_fwd_hs<S>(c, out, att, a, B, T);
    });
    wf_cuda_sync(c, "wf_attention_fwd");
}

/* scratch: D = rowsum(P * dP) = dout . out per (b, h, t), B*H*T floats. */
extern "C" void wf_attention_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout,
                                 const float *qkv, const float *out, const float *att, int B, int T, int C,
                                 int H) {
    flash_check_shape(c, "wf_attention_bwd", B, C, H);
    WF_BY_STORAGE(c, S, {
        flash_heads a = packed_heads<S>(qkv, dqkv, C, H);
        flash_bwd_d<S>(c, scratch, dout, out, a, B, T);
        if (wf_attention_tc_takes(c, a.hs))
            wf_attention_tc_bwd(c, scratch, dout, att, a, B, T);
        else
            flash_bwd_hs<S>(c, scratch, dout, att, a, B, T);
    });
    wf_cuda_sync(c, "wf_attention_bwd");
}

/* Grouped-query attention (the LLaMA family), the same kernels and the same
 * contract: att holds the base-2 log-sum-exp per (b, query head, t), scratch
 * D per (b, query head, t), B*H*T floats each; bf16 / fp16 plans on tensor
 * cores as GPT-2's. */
extern "C" void wf_gqa_attention_fwd(wf_ctx *c, float *out, float *att, const float *qk, const float *v,
                                     int B, int T, int H, int KVH, int hd) {
    flash_check_heads(c, "wf_gqa_attention_fwd", B, H, KVH, hd);
    WF_BY_STORAGE(c, S, {
        flash_heads a = gqa_heads<S>(qk, v, NULL, NULL, H, KVH, hd);
        if (wf_attention_tc_takes(c, hd))
            wf_attention_tc_fwd(c, out, att, a, B, T);
        else
            flash_fwd_hs<S>(c, out, att, a, B, T);
    });
    wf_cuda_sync(c, "wf_gqa_attention_fwd");
}

extern "C" void wf_gqa_attention_bwd(wf_ctx *c, float *dqk, float *dv, float *scratch, const float *dout,
                                     const float *qk, const float *v, const float *out, const float *att, int B,
                                     int T, int H, int KVH, int hd) {
    flash_check_heads(c, "wf_gqa_attention_bwd", B, H, KVH, hd);
    WF_BY_STORAGE(c, S, {
        flash_heads a = gqa_heads<S>(qk, v, dqk, dv, H, KVH, hd);
        flash_bwd_d<S>(c, scratch, dout, out, a, B, T);
        if (wf_attention_tc_takes(c, hd))
            wf_attention_tc_bwd(c, scratch, dout, att, a, B, T);
        else
            flash_bwd_hs<S>(c, scratch, dout, att, a, B, T);
    });
    wf_cuda_sync(c, "wf_gqa_attention_bwd");
}
