/* attention_tc.cu: causal self-attention on tensor cores for bf16 and fp16
 * plans (WMMA, 16x16x16 fragments of the plan's 16-bit type, float
 * accumulators), the same contract as the fp32 kernels of attention.cu: out
 * and the base-2 log-sum-exp of each query row (`att`, B*H*T floats)
 * forward; dq, dk, dv (+=) backward, from D_i = rowsum(P * dP) = dout_i .
 * out_i, which attention.cu's D kernel writes to `scratch` (B*H*T floats)
 * before these kernels run; the T x T matrix never in memory; no atomics.  The heads'
 * places come as a flash_heads (attention_tc.h): GPT-2's packed qkv, or
 * LLaMA's grouped-query layout, whose dk/dv kernel sums over the query heads
 * of its key/value head.
 *
 * Rounding.  In a bf16 / fp16 plan q, k, v and dout hold values of the
 * 16-bit type: stored in 16 bits under act16 (weft/rt.h), or fp32 values the
 * generated code has rounded, so loading a tile into shared memory as 16-bit
 * values is exact either way.  Products are exact in fp32 and summed in fp32 by the tensor
 * cores (S = Q K^T, dP = dO V^T; their order of additions is the hardware's).  The softmax (max, exponentials, row sums, the running
 * rescale) is fp32.  What is rounded to the 16-bit type: P before P V and
 * P^T dO, and dS = P * (dP - D) before dS K and dS^T Q, as flash attention
 * does.  D is summed in fp32 from the stored dout and out, and out is the
 * forward's output rounded to the 16-bit type (the plan rounds it, or it is
 * stored in 16 bits under act16), so D carries that rounding, as in
 * FlashAttention-2 (|D - rowsum(P dP)| <= about 2^-8 |dout_i| |out_i| in
 * bf16, the same order as rounding dS).  In fp16, P <= 1
 * always fits; dS carries dout's scale (loss scaling), and where it
 * overflows the gradient comes out inf, which the loss scaler's overflow
 * check catches as it does any other.
 *
 * Layout.  A block is 4 warps (128 threads) over a tile of 64 rows (query
 * rows forward and in the dq kernel, key rows in the dk/dv kernel); warp w
 * owns rows [16w, 16w + 16) of it.  The other operand comes in tiles of 64
 * rows through shared memory, as the 16-bit type, rows HS + 8 elements apart
 * (HS = head size rounded up to 32, 64 or 128, zero columns past hs; the 8
 * skew banks).  WMMA's element mapping inside a fragment is unspecified, so
 * a warp's 16 x 64 scores go through shared memory (store_matrix_sync) to
 * its 32 lanes: lane l takes row l / 2 and the columns of parity l % 2
 * (column 2k + l % 2 at step k), the two lanes of a row meeting by one
 * shuffle.  The forward keeps its output rows in registers in that mapping
 * (it rescales them per key tile); the backward's dq, dk, dv sums only grow,
 * so they stay in accumulator fragments until the end.
 *
 *   forward     block per query tile (the last first), key tiles 0..diagonal:
 *               S, online softmax, O = O * alpha + P V;
 *   (D)         attention.cu's flash_bwd_d_kernel: D = dout . out per row;
 *   dq kernel   block per query tile, one sweep over its key tiles: S, dP,
 *               dS = P (dP - D) with D read from scratch, dq = scale dS K
 *               (3 tile products per key tile; before `out` was an
 *               argument, a first sweep recomputed S and dP only to sum D,
 *               2 more: the backward is now 7 tile products, not 9);
 *   dk/dv       block per key tile, query tiles diagonal..last: dv = P^T dO,
 *               dk = scale dS^T Q, the same D (same stream).
 *
 * On the diagonal tile a warp skips the 16-column fragments wholly in the
 * future of its rows (forward, dq) or wholly before its keys (dk/dv); tiles
 * above the diagonal are never visited.
 *
 * Under act16 (storage.cuh) q, k, v, dout, out and dq, dk, dv hold the plan's
 * 16-bit bits: tiles are loaded into shared memory as they are (no
 * conversion), out is stored rounded and the gradients are read, added to in
 * fp32 and stored rounded; the layout's storage type S says which. */
#include <mma.h>
#include <stdint.h>

#include "attention_tc.h"
#include "cuda_rt.h"

using namespace nvcuda;

/* Kernel names start flash_: libweft_kprof.so's "attention" class
 * (kernel_profile.c) matches them by that. */
#define TC_WARPS 4
#define TC_THREADS (32 * TC_WARPS)
#define TC_ROWS 64 /* rows of a tile: 16 per warp */
#define TC_FULL 0xffffffffu
#define TC_LOG2E 1.4426950408889634f

/* Shared memory of a kernel with n 64-row 16-bit tiles, carved from the
 * dynamic buffer rounded up to 128 bytes (WMMA wants 256-bit aligned
 * fragments: every offset below is a multiple of 32 bytes). */
template <int HS_, class T16_, class S_ = wf_st_f32> struct tc_smem {
    static constexpr int HS = HS_;
    typedef T16_ T16;
    typedef S_ S; /* the activations' storage: floats, or T16's bits under act16 */
    static constexpr int LD = HS + 8;          /* 16-bit tile row stride (elements) */
    static constexpr int LDS = TC_ROWS + 4;    /* fp32 score staging stride */
    static constexpr int LDO = HS + 4;         /* fp32 output staging stride */
    static constexpr int LDP = TC_ROWS + 8;    /* 16-bit P / dS stride */
    static constexpr int TILE = TC_ROWS * LD;  /* elements of a tile */
    static constexpr int P16 = 16 * LDP;       /* elements of a warp's P (or dS) */
    /* floats of a warp's staging: backward S and dP (16 x 64 each), forward S
     * only; either holds the warp's 16 output rows (stride LDO) too */
    __host__ __device__ static constexpr int stage_floats(bool bwd) { return bwd ? 2 * 16 * LDS : 16 * (LDS > LDO ? LDS : LDO); }
    static_assert(16 * LDO <= 2 * 16 * LDS, "a warp's 16 output rows fit its backward staging");
    /* n tiles; the backward's staging and dS (the forward's is smaller, so
     * more of its blocks fit an SM) */
    static constexpr size_t bytes(int n, bool bwd) {
        return 128 + (size_t)n * TILE * sizeof(T16) +
               TC_WARPS * (stage_floats(bwd) * sizeof(float) + (bwd ? 2 : 1) * P16 * sizeof(T16)) +
               2 * TC_ROWS * sizeof(float);
    }

    T16 *tile[4];
    float *stage; /* this warp's: S at [0, 16 LDS), dP after it; outputs (stride LDO) at 0 */
    T16 *p, *ds;  /* this warp's P and (backward) dS, 16 x 64 */
    float *row_lse, *row_d;

    __device__ tc_smem(unsigned char *raw, int n, bool bwd) {
        unsigned char *at = (unsigned char *)(((uintptr_t)raw + 127) & ~(uintptr_t)127);
        for (int k = 0; k < 4; k++) tile[k] = k < n ? (T16 *)at + k * TILE : nullptr;
        at += (size_t)n * TILE * sizeof(T16);
        int w = (int)threadIdx.x / 32, np = bwd ? 2 : 1;
        stage = (float *)at + w * stage_floats(bwd);
        at += TC_WARPS * stage_floats(bwd) * sizeof(float);
        p = (T16 *)at + np * w * P16;
        ds = bwd ? p + P16 : nullptr;
        at += TC_WARPS * np * P16 * sizeof(T16);
        row_lse = (float *)at;
        row_d = row_lse + TC_ROWS;
    }
};

template <class T16> __device__ __forceinline__ T16 tc_to16(float v);
template <> __device__ __forceinline__ __nv_bfloat16 tc_to16<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half tc_to16<__half>(float v) { return __float2half_rn(v); }

template <class T16> using tc_frag_a = wmma::fragment<wmma::matrix_a, 16, 16, 16, T16, wmma::row_major>;
template <class T16> using tc_frag_b = wmma::fragment<wmma::matrix_b, 16, 16, 16, T16, wmma::row_major>;
/* B = X^T for a row-major X: the same memory read column-major */
template <class T16> using tc_frag_bt = wmma::fragment<wmma::matrix_b, 16, 16, 16, T16, wmma::col_major>;
typedef wmma::fragment<wmma::accumulator, 16, 16, 16, float> tc_frag_acc;

/* Rows [row0, row0 + 64) of a (T, ld) fp32 matrix, hs wide, into a 16-bit
 * tile; zeros past T and past hs.  Exact for values of the 16-bit type.
 * As float4 where src is 16-byte aligned (hs and ld are multiples of 4, so
 * then every row's chunks are; the test is block-uniform). */
template <int HS, class T16>
__device__ __forceinline__ void tc_load_tile(T16 *dst, const float *src, int row0, int T, long ld, int hs) {
    constexpr int LD = tc_smem<HS, T16>::LD;
    if (((uintptr_t)src & 15) == 0) {
        for (int idx = threadIdx.x; idx < TC_ROWS * HS / 4; idx += TC_THREADS) {
            int r = idx / (HS / 4), d = 4 * (idx % (HS / 4)), row = row0 + r;
            float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (row < T && d < hs) v = *(const float4 *)(src + (long)row * ld + d);
            T16 *o = dst + r * LD + d;
            o[0] = tc_to16<T16>(v.x);
            o[1] = tc_to16<T16>(v.y);
            o[2] = tc_to16<T16>(v.z);
            o[3] = tc_to16<T16>(v.w);
        }
        return;
    }
    for (int idx = threadIdx.x; idx < TC_ROWS * HS; idx += TC_THREADS) {
        int r = idx / HS, d = idx % HS, row = row0 + r;
        dst[r * LD + d] = tc_to16<T16>(row < T && d < hs ? src[(long)row * ld + d] : 0.0f);
    }
}

/* The same from a 16-bit activation (act16) holding T16's bits: copied as
 * they are, 8 at a time where src is 16-byte aligned (hs and ld are then
 * multiples of 8, so every row's chunks are; a tile row is LD elements, a
 * multiple of 8, so the shared side is aligned too). */
template <int HS, class T16>
__device__ __forceinline__ void tc_load_tile(T16 *dst, const uint16_t *src, int row0, int T, long ld, int hs) {
    constexpr int LD = tc_smem<HS, T16>::LD;
    uint16_t *d16 = reinterpret_cast<uint16_t *>(dst);
    if (((uintptr_t)src & 15) == 0 && ld % 8 == 0 && hs % 8 == 0) {
        for (int idx = threadIdx.x; idx < TC_ROWS * HS / 8; idx += TC_THREADS) {
            int r = idx / (HS / 8), d = 8 * (idx % (HS / 8)), row = row0 + r;
            uint4 v = make_uint4(0u, 0u, 0u, 0u);
            if (row < T && d < hs) v = *(const uint4 *)(src + (long)row * ld + d);
            *(uint4 *)(d16 + r * LD + d) = v;
        }
        return;
    }
    for (int idx = threadIdx.x; idx < TC_ROWS * HS; idx += TC_THREADS) {
        int r = idx / HS, d = idx % HS, row = row0 + r;
        d16[r * LD + d] = row < T && d < hs ? src[(long)row * ld + d] : (uint16_t)0;
    }
}

/* dst (16 x 64 fp32, stride LDS) = A X^T: A 16 rows, X a tile (64 rows),
 * over the HS columns; only the 16-column blocks [f0, f1) of dst.  Each
 * fragment of A is loaded once for the four blocks (a warp-uniform guard, so
 * the accumulators keep compile-time indices). */
template <int HS, class T16>
__device__ __forceinline__ void tc_abt(float *dst, const T16 *a, const T16 *x, int f0, int f1) {
    constexpr int LD = tc_smem<HS, T16>::LD;
    tc_frag_acc acc[4];
#pragma unroll
    for (int f = 0; f < 4; f++) wmma::fill_fragment(acc[f], 0.0f);
#pragma unroll
    for (int d = 0; d < HS / 16; d++) {
        tc_frag_a<T16> fa;
        wmma::load_matrix_sync(fa, a + 16 * d, LD);
#pragma unroll
        for (int f = 0; f < 4; f++)
            if (f >= f0 && f < f1) {
                tc_frag_bt<T16> fb;
                wmma::load_matrix_sync(fb, x + 16 * f * LD + 16 * d, LD);
                wmma::mma_sync(acc[f], fa, fb, acc[f]);
            }
    }
#pragma unroll
    for (int f = 0; f < 4; f++)
        if (f >= f0 && f < f1) wmma::store_matrix_sync(dst + 16 * f, acc[f], tc_smem<HS, T16>::LDS, wmma::mem_row_major);
}

/* acc[0..HS/16) += P X: P a warp's 16 x 64 (stride LDP), X a tile (64 x HS),
 * over the 16-row blocks [f0, f1) of X (the columns of P past them are 0). */
template <int HS, class T16>
__device__ __forceinline__ void tc_pv(tc_frag_acc *acc, const T16 *p, const T16 *x, int f0, int f1) {
    constexpr int LD = tc_smem<HS, T16>::LD, LDP = tc_smem<HS, T16>::LDP;
    for (int f = f0; f < f1; f++) {
        tc_frag_a<T16> fa;
        wmma::load_matrix_sync(fa, p + 16 * f, LDP);
#pragma unroll
        for (int d = 0; d < HS / 16; d++) {
            tc_frag_b<T16> fb;
            wmma::load_matrix_sync(fb, x + 16 * f * LD + 16 * d, LD);
            wmma::mma_sync(acc[d], fa, fb, acc[d]);
        }
    }
}

/* The warp's 16 x HS accumulators into its staging (stride LDO), readable by
 * every lane of the warp on return. */
template <int HS, class T16>
__device__ __forceinline__ void tc_stage_out(float *stage, const tc_frag_acc *acc) {
    __syncwarp();  /* every lane is done reading the staging */
#pragma unroll
    for (int d = 0; d < HS / 16; d++)
        wmma::store_matrix_sync(stage + 16 * d, acc[d], tc_smem<HS, T16>::LDO, wmma::mem_row_major);
    __syncwarp();
}

/* grid (tiles, B*H), block TC_THREADS: query tile nT-1-blockIdx.x (the
 * longest first), key tiles 0..diagonal. */
template <class L>
__global__ void __launch_bounds__(TC_THREADS)
flash_tc_fwd_kernel(float *out, float *lse, flash_heads a, int T, float scale2) {
    constexpr int HS = L::HS;
    typedef typename L::T16 T16;
    typedef typename L::S Act; /* the activations' storage */
    WF_DYNAMIC_SHARED(unsigned char, raw);
    L sh(raw, 3, false);
    T16 *qs = sh.tile[0], *ks = sh.tile[1], *vs = sh.tile[2];
    int n_tiles = (T + TC_ROWS - 1) / TC_ROWS, qt = n_tiles - 1 - (int)blockIdx.x;
    int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, kv = h / a.group, hs = a.hs;
    const typename Act::raw *q = flash_q<Act>(a, b, h, T);
    const typename Act::raw *k = flash_k<Act>(a, b, kv, T);
    const typename Act::raw *v = flash_v<Act>(a, b, kv, T);
    int w = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, r = lane >> 1, par = lane & 1;
    int i = qt * TC_ROWS + 16 * w + r;
    const T16 *qw = qs + 16 * w * L::LD;

    tc_load_tile<HS, T16>(qs, q, qt * TC_ROWS, T, a.ldq, hs);
    float o[HS / 2], m = -INFINITY, l = 0.0f;
#pragma unroll
    for (int e = 0; e < HS / 2; e++) o[e] = 0.0f;

    for (int kt = 0; kt <= qt; kt++) {
        __syncthreads(); /* the previous tiles are consumed */
        tc_load_tile<HS, T16>(ks, k, kt * TC_ROWS, T, a.ldk, hs);
        tc_load_tile<HS, T16>(vs, v, kt * TC_ROWS, T, a.ldv, hs);
        __syncthreads();
        int nf = kt == qt ? w + 1 : 4; /* key fragments with a key not after the warp's rows */
        tc_abt<HS, T16>(sh.stage, qw, ks, 0, nf);
        __syncwarp();

        /* online softmax of this row's 64 scores; key 0 is in the first
         * tile, so m is finite after it */
        float s[32], mc = -INFINITY;
#pragma unroll
        for (int e = 0; e < 32; e++) {
            int col = 2 * e + par;
            s[e] = col < 16 * nf && kt * TC_ROWS + col <= i ? sh.stage[r * L::LDS + col] * scale2 : -INFINITY;
            mc = fmaxf(mc, s[e]);
        }
        mc = fmaxf(mc, __shfl_xor_sync(TC_FULL, mc, 1));
        float mn = fmaxf(m, mc), alpha = exp2f(m - mn), rs = 0.0f;
#pragma unroll
        for (int e = 0; e < 32; e++) {
            float p = exp2f(s[e] - mn);
            rs += p;
            sh.p[r * L::LDP + 2 * e + par] = tc_to16<T16>(p);
        }
        rs += __shfl_xor_sync(TC_FULL, rs, 1);
        l = l * alpha + rs;
        m = mn;

        tc_frag_acc acc[HS / 16];
#pragma unroll
        for (int d = 0; d < HS / 16; d++) wmma::fill_fragment(acc[d], 0.0f);
        __syncwarp(); /* P complete */
        tc_pv<HS, T16>(acc, sh.p, vs, 0, nf);
        tc_stage_out<HS, T16>(sh.stage, acc);
#pragma unroll
        for (int e = 0; e < HS / 2; e++) o[e] = o[e] * alpha + sh.stage[r * L::LDO + 2 * e + par];
    }
    if (i >= T) return;
    float inv = 1.0f / l;
    typename Act::raw *orow =
        reinterpret_cast<typename Act::raw *>(out) + ((long)b * T + i) * ((long)a.H * hs) + (long)h * hs;
#pragma unroll
    for (int e = 0; e < HS / 2; e++)
        if (2 * e + par < hs) Act::store(orow, 2 * e + par, o[e] * inv);
    if (par == 0) lse[(long)bh * T + i] = m + log2f(l);
}

/* S (into stage) and dP (after it) for this warp's 16 rows of a and da
 * against the key fragments [f0, f1) of x and dx: S = a x^T, dP = da dx^T. */
template <int HS, class T16>
__device__ __forceinline__ void tc_scores(float *stage, const T16 *a, const T16 *x, const T16 *da,
                                          const T16 *dx, int f0, int f1) {
    tc_abt<HS, T16>(stage, a, x, f0, f1);
    tc_abt<HS, T16>(stage + 16 * tc_smem<HS, T16>::LDS, da, dx, f0, f1);
    __syncwarp();
}

/* One key tile of the dq kernel's sweep: k and v rows [kt*64, kt*64+64)
 * into shared memory, then this warp's S = q k^T and dP = dout v^T staged
 * for its lanes.  Returns how many 16-key fragments the warp needs (on the
 * diagonal tile, those not wholly after its queries). */
template <int HS, class T16, class R>
__device__ static int dq_key_tile(float *stage, T16 *ks, T16 *vs, const T16 *qw, const T16 *dyw,
                                  const flash_heads &a, const R *k, const R *v, int kt, int qt, int w,
                                  int T, int hs) {
    __syncthreads();
    tc_load_tile<HS, T16>(ks, k, kt * TC_ROWS, T, a.ldk, hs);
    tc_load_tile<HS, T16>(vs, v, kt * TC_ROWS, T, a.ldv, hs);
    __syncthreads();
    int nf = kt == qt ? w + 1 : 4;
    tc_scores<HS, T16>(stage, qw, ks, dyw, vs, 0, nf);
    return nf;
}

/* dq per query row (grid and order as forward), D from dsum. */
template <class L>
__global__ void __launch_bounds__(TC_THREADS)
flash_tc_bwd_dq_kernel(const float *dsum, const float *dout, const float *lse, flash_heads a, int T, float scale,
                       float scale2) {
    constexpr int HS = L::HS;
    typedef typename L::T16 T16;
    typedef typename L::S Act; /* the activations' storage */
    WF_DYNAMIC_SHARED(unsigned char, raw);
    L sh(raw, 4, true);
    T16 *qs = sh.tile[0], *dys = sh.tile[1], *ks = sh.tile[2], *vs = sh.tile[3];
    int n_tiles = (T + TC_ROWS - 1) / TC_ROWS, qt = n_tiles - 1 - (int)blockIdx.x;
    int bh = blockIdx.y, b = bh / a.H, h = bh % a.H, kv = h / a.group, hs = a.hs;
    long ldo = (long)a.H * hs;
    const typename Act::raw *q = flash_q<Act>(a, b, h, T);
    const typename Act::raw *k = flash_k<Act>(a, b, kv, T);
    const typename Act::raw *v = flash_v<Act>(a, b, kv, T);
    const typename Act::raw *dy = flash_dout<Act>(a, reinterpret_cast<const typename Act::raw *>(dout), b, h, T);
    int w = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, r = lane >> 1, par = lane & 1;
    int i = qt * TC_ROWS + 16 * w + r;
    const T16 *qw = qs + 16 * w * L::LD, *dyw = dys + 16 * w * L::LD;
    const float *S = sh.stage, *dP = sh.stage + 16 * L::LDS;

    tc_load_tile<HS, T16>(qs, q, qt * TC_ROWS, T, a.ldq, hs);
    tc_load_tile<HS, T16>(dys, dy, qt * TC_ROWS, T, ldo, hs);
    float li = i < T ? lse[(long)bh * T + i] : 0.0f, D = i < T ? dsum[(long)bh * T + i] : 0.0f;

    /* dq = scale sum_j dS_j k_j, dS = P (dP - D) */
    tc_frag_acc acc[HS / 16];
#pragma unroll
    for (int d = 0; d < HS / 16; d++) wmma::fill_fragment(acc[d], 0.0f);
    for (int kt = 0; kt <= qt; kt++) {
        int nf = dq_key_tile<HS, T16, typename Act::raw>(sh.stage, ks, vs, qw, dyw, a, k, v, kt, qt, w, T, hs);
#pragma unroll 8
        for (int e = 0; e < 32; e++) {
            int col = 2 * e + par;
            float ds = 0.0f;
            if (col < 16 * nf && kt * TC_ROWS + col <= i)
                ds = exp2f(S[r * L::LDS + col] * scale2 - li) * (dP[r * L::LDS + col] - D);
            sh.ds[r * L::LDP + col] = tc_to16<T16>(ds);
        }
        __syncwarp(); /* dS complete */
        tc_pv<HS, T16>(acc, sh.ds, ks, 0, nf);
    }
    tc_stage_out<HS, T16>(sh.stage, acc);
    if (i >= T) return;
    typename Act::raw *dq = reinterpret_cast<typename Act::raw *>(a.dq) + ((long)b * T + i) * a.ldq + (long)h * hs;
#pragma unroll
    for (int e = 0; e < HS / 2; e++)
        if (2 * e + par < hs)
            Act::store(dq, 2 * e + par, Act::load(dq, 2 * e + par) + scale * sh.stage[r * L::LDO + 2 * e + par]);
}

/* dk and dv per key row of one key/value head: block per key tile
 * blockIdx.x (tile 0, the most query tiles, first) and (b, kv head)
 * blockIdx.y; over the group's query heads in order, and for each the query
 * tiles diagonal..last, into the same accumulator fragments (the group's sum
 * has one owner and a fixed order, no atomics). */
template <class L>
__global__ void __launch_bounds__(TC_THREADS)
flash_tc_bwd_dkdv_kernel(const float *dsum, const float *dout, const float *lse, flash_heads a, int T,
                         float scale, float scale2) {
    constexpr int HS = L::HS;
    typedef typename L::T16 T16;
    typedef typename L::S Act; /* the activations' storage */
    WF_DYNAMIC_SHARED(unsigned char, raw);
    L sh(raw, 4, true);
    T16 *ks = sh.tile[0], *vs = sh.tile[1], *qs = sh.tile[2], *dys = sh.tile[3];
    int n_tiles = (T + TC_ROWS - 1) / TC_ROWS, kt = (int)blockIdx.x;
    int KVH = a.H / a.group, b = blockIdx.y / KVH, kv = blockIdx.y % KVH, hs = a.hs;
    long ldo = (long)a.H * hs;
    const typename Act::raw *k = flash_k<Act>(a, b, kv, T);
    const typename Act::raw *v = flash_v<Act>(a, b, kv, T);
    int w = (int)threadIdx.x / 32, lane = (int)threadIdx.x % 32, r = lane >> 1, par = lane & 1;
    int j = kt * TC_ROWS + 16 * w + r;
    const T16 *kw = ks + 16 * w * L::LD, *vw = vs + 16 * w * L::LD;
    const float *St = sh.stage, *dPt = sh.stage + 16 * L::LDS; /* transposed: key rows, query columns */

    tc_load_tile<HS, T16>(ks, k, kt * TC_ROWS, T, a.ldk, hs);
    tc_load_tile<HS, T16>(vs, v, kt * TC_ROWS, T, a.ldv, hs);
    tc_frag_acc dk[HS / 16], dv[HS / 16];
#pragma unroll
    for (int d = 0; d < HS / 16; d++) {
        wmma::fill_fragment(dk[d], 0.0f);
        wmma::fill_fragment(dv[d], 0.0f);
    }

    for (int h = kv * a.group; h < (kv + 1) * a.group; h++) {
        long bh = (long)b * a.H + h;
        const typename Act::raw *q = flash_q<Act>(a, b, h, T);
        const typename Act::raw *dy = flash_dout<Act>(a, reinterpret_cast<const typename Act::raw *>(dout), b, h, T);
        for (int qt = kt; qt < n_tiles; qt++) {
            __syncthreads();
            tc_load_tile<HS, T16>(qs, q, qt * TC_ROWS, T, a.ldq, hs);
            tc_load_tile<HS, T16>(dys, dy, qt * TC_ROWS, T, ldo, hs);
            for (int rr = threadIdx.x; rr < TC_ROWS; rr += TC_THREADS) {
                int ii = qt * TC_ROWS + rr;
                sh.row_lse[rr] = ii < T ? lse[bh * T + ii] : 0.0f;
                sh.row_d[rr] = ii < T ? dsum[bh * T + ii] : 0.0f;
            }
            __syncthreads();
            int f0 = qt == kt ? w : 0; /* query fragments with a query not before the warp's keys */
            tc_scores<HS, T16>(sh.stage, kw, qs, vw, dys, f0, 4);
#pragma unroll 8
            for (int e = 0; e < 32; e++) {
                int col = 2 * e + par, ii = qt * TC_ROWS + col;
                float p = 0.0f, ds = 0.0f;
                if (col >= 16 * f0 && j <= ii && ii < T) {
                    p = exp2f(St[r * L::LDS + col] * scale2 - sh.row_lse[col]);
                    ds = p * (dPt[r * L::LDS + col] - sh.row_d[col]);
                }
                sh.p[r * L::LDP + col] = tc_to16<T16>(p);
                sh.ds[r * L::LDP + col] = tc_to16<T16>(ds);
            }
            __syncwarp(); /* P^T and dS^T complete */
            tc_pv<HS, T16>(dv, sh.p, dys, f0, 4);
            tc_pv<HS, T16>(dk, sh.ds, qs, f0, 4);
        }
    }
    typename Act::raw *dkrow = reinterpret_cast<typename Act::raw *>(a.dk) + ((long)b * T + j) * a.ldk + (long)kv * hs;
    typename Act::raw *dvrow = reinterpret_cast<typename Act::raw *>(a.dv) + ((long)b * T + j) * a.ldv + (long)kv * hs;
    tc_stage_out<HS, T16>(sh.stage, dk);
#pragma unroll
    for (int e = 0; e < HS / 2; e++)
        if (j < T && 2 * e + par < hs)
            Act::store(dkrow, 2 * e + par, Act::load(dkrow, 2 * e + par) + scale * sh.stage[r * L::LDO + 2 * e + par]);
    tc_stage_out<HS, T16>(sh.stage, dv);
#pragma unroll
    for (int e = 0; e < HS / 2; e++)
        if (j < T && 2 * e + par < hs)
            Act::store(dvrow, 2 * e + par, Act::load(dvrow, 2 * e + par) + sh.stage[r * L::LDO + 2 * e + par]);
}

/* ---- host side ------------------------------------------------------------------ */

int wf_attention_tc_takes(wf_ctx *c, int hs) {
    int p = wf_ctx_precision(c);
    if (p != WF_BF16 && p != WF_FP16) return 0;
    return hs >= 16 && hs % 16 == 0 && hs <= 128;
}

/* The kernels take more than the default 48 KiB of dynamic shared memory.
 * Once per kernel and context (its size is fixed; the attribute is the
 * context's device's): the first call of a step runs eagerly, so the
 * attribute is set before a CUDA graph captures the launches.  At most one
 * forward and two backward kernels per head size (3) and type and storage
 * pair (4). */
enum { TC_KERNELS = 3 * 3 * 4 };

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx). */
struct wf_cuda_tc {
    const void *allowed[TC_KERNELS];
    int n_allowed;
};

static void tc_allow_smem(wf_ctx *c, const void *kernel, size_t bytes) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->tc) x->tc = (struct wf_cuda_tc *)wf_cuda_zalloc(c, sizeof *x->tc, "attention_tc.cu's state");
    struct wf_cuda_tc *t = x->tc;
    for (int i = 0; i < t->n_allowed; i++)
        if (t->allowed[i] == kernel) return;
    if (t->n_allowed == TC_KERNELS)
        wf_cuda_fail(c, "cudaFuncSetAttribute", WF_CUDA_WHERE,
                     "more tensor-core attention kernels than TC_KERNELS");
    WF_CUDA(c, cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    t->allowed[t->n_allowed++] = kernel;
}

template <int HS, class T16, class S>
static void tc_fwd(wf_ctx *c, float *out, float *lse, const flash_heads &a, int B, int T) {
    typedef tc_smem<HS, T16, S> L; /* the kernels' one template argument */
    size_t smem = L::bytes(3, false);
    tc_allow_smem(c, (const void *)flash_tc_fwd_kernel<L>, smem);
    dim3 grid((T + TC_ROWS - 1) / TC_ROWS, B * a.H);
    float scale2 = TC_LOG2E / sqrtf((float)a.hs);
    WF_LAUNCH(flash_tc_fwd_kernel<L>, grid, TC_THREADS, smem, wf_cuda_stream(c))(out, lse, a, T, scale2);
}

/* dq over (query tile, b, query head); dk/dv over (key tile, b, kv head) */
template <int HS, class T16, class S>
static void tc_bwd(wf_ctx *c, const float *dsum, const float *dout, const float *lse, const flash_heads &a, int B,
                   int T) {
    typedef tc_smem<HS, T16, S> L;
    size_t smem = L::bytes(4, true);
    tc_allow_smem(c, (const void *)flash_tc_bwd_dq_kernel<L>, smem);
    tc_allow_smem(c, (const void *)flash_tc_bwd_dkdv_kernel<L>, smem);
    int tiles = (T + TC_ROWS - 1) / TC_ROWS;
    dim3 grid(tiles, B * a.H), grid_kv(tiles, B * (a.H / a.group));
    /* scale2 as the forward computes it: P is recomputed against its lse */
    float scale = 1.0f / sqrtf((float)a.hs), scale2 = TC_LOG2E / sqrtf((float)a.hs);
    cudaStream_t s = wf_cuda_stream(c);
    WF_LAUNCH(flash_tc_bwd_dq_kernel<L>, grid, TC_THREADS, smem, s)(dsum, dout, lse, a, T, scale, scale2);
    WF_LAUNCH(flash_tc_bwd_dkdv_kernel<L>, grid_kv, TC_THREADS, smem, s)(dsum, dout, lse, a, T, scale, scale2);
}

/* the instance for the head size (rounded up to 32, 64 or 128), type and storage */
template <class T16, class S>
static void tc_fwd_hs(wf_ctx *c, float *out, float *lse, const flash_heads &a, int B, int T) {
    if (a.hs <= 32) tc_fwd<32, T16, S>(c, out, lse, a, B, T);
    else if (a.hs <= 64) tc_fwd<64, T16, S>(c, out, lse, a, B, T);
    else tc_fwd<128, T16, S>(c, out, lse, a, B, T);
}

template <class T16, class S>
static void tc_bwd_hs(wf_ctx *c, const float *dsum, const float *dout, const float *lse, const flash_heads &a, int B,
                      int T) {
    if (a.hs <= 32) tc_bwd<32, T16, S>(c, dsum, dout, lse, a, B, T);
    else if (a.hs <= 64) tc_bwd<64, T16, S>(c, dsum, dout, lse, a, B, T);
    else tc_bwd<128, T16, S>(c, dsum, dout, lse, a, B, T);
}

/* Under act16 the activations hold the plan's type, whose bits the tiles take */
void wf_attention_tc_fwd(wf_ctx *c, float *out, float *lse, const flash_heads &a, int B, int T) {
    bool act16 = wf_ctx_act16(c) != 0;
    if (wf_ctx_precision(c) == WF_BF16) {
        if (act16) tc_fwd_hs<__nv_bfloat16, wf_st_bf16>(c, out, lse, a, B, T);
        else tc_fwd_hs<__nv_bfloat16, wf_st_f32>(c, out, lse, a, B, T);
    } else {
        if (act16) tc_fwd_hs<__half, wf_st_fp16>(c, out, lse, a, B, T);
        else tc_fwd_hs<__half, wf_st_f32>(c, out, lse, a, B, T);
    }
}

void wf_attention_tc_bwd(wf_ctx *c, const float *dsum, const float *dout, const float *lse, const flash_heads &a,
                         int B, int T) {
    bool act16 = wf_ctx_act16(c) != 0;
    if (wf_ctx_precision(c) == WF_BF16) {
        if (act16) tc_bwd_hs<__nv_bfloat16, wf_st_bf16>(c, dsum, dout, lse, a, B, T);
        else tc_bwd_hs<__nv_bfloat16, wf_st_f32>(c, dsum, dout, lse, a, B, T);
    } else {
        if (act16) tc_bwd_hs<__half, wf_st_fp16>(c, dsum, dout, lse, a, B, T);
        else tc_bwd_hs<__half, wf_st_f32>(c, dsum, dout, lse, a, B, T);
    }
}
