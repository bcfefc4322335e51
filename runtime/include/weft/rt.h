/* weft/rt.h: the one header that generated programs include.
 *
 * The runtime is shaped for the GPU from the start: every kernel takes an
 * execution context (a stream on CUDA, trivial on the CPU), collectives are
 * asynchronous and return handles, and every buffer is a slice of an arena whose
 * size and offsets the compiler planned.  The CPU backend implements these calls
 * with OpenBLAS and MPI.
 *
 * Conventions for kernels (all fp32, row-major):
 *   - activations are (N, width) with N = B * T tokens;
 *   - linear weights are stored (in, out) as in Hugging Face GPT-2's Conv1D, so
 *     y = x @ W + b;
 *   - every backward kernel ACCUMULATES (+=) into input and parameter gradients;
 *     the caller zeroes gradient buffers when a new accumulation starts.
 */
#ifndef WEFT_RT_H
#define WEFT_RT_H

#include <stddef.h>
#include <stdint.h>

#include "weft/mesh.h"

/* C linkage when a generated program is compiled as CUDA C++ (--backend cuda). */
#ifdef __cplusplus
extern "C" {
#endif

#define WF_VERSION "0.1.0"

typedef struct wf_ctx wf_ctx; /* execution context: rank, communicators, stream, timers */

/* ---- kernels (runtime/cpu/: one file per op family, as runtime/cuda/) --- */

/* out[b,t,:] = wte[tok[b,t],:] + wpe[t,:] */
void wf_embed_fwd(wf_ctx *c, float *out, const int32_t *tok, const float *wte,
                  const float *wpe, int B, int T, int C);
void wf_embed_bwd(wf_ctx *c, float *dwte, float *dwpe, const float *dout,
                  const int32_t *tok, int B, int T, int C);

/* mean and rstd are saved for backward (N floats each). */
void wf_layernorm_fwd(wf_ctx *c, float *out, float *mean, float *rstd,
                      const float *inp, const float *w, const float *b, int N, int C);
void wf_layernorm_bwd(wf_ctx *c, float *dinp, float *dw, float *db,
                      const float *dout, const float *inp, const float *w,
                      const float *mean, const float *rstd, int N, int C);

/* Fused residual add + layernorm (the compiler forms it from an add whose
 * output a layernorm reads next, as GPT-2's x = x + attn(..); ln_2(x)):
 *   res_out = a + b (rounded to the plan's 16-bit type, if any, before it is
 *   normalized, exactly as the unfused pair rounds it), ln_out = layernorm(res_out).
 * Backward, with t = dres + the layernorm's input gradient of dln (rounded as
 * the unfused layernorm backward rounds its input gradient):
 *   da += t, db += t (the _input half);  dw, dbias += as wf_layernorm_bwd_weight
 *   on (dln, res).  dres is the residual stream's gradient from its other
 *   readers, complete when this runs; it is read, not written. */
void wf_residual_layernorm_fwd(wf_ctx *c, float *res_out, float *ln_out, float *mean, float *rstd,
                               const float *a, const float *b, const float *w, const float *bias,
                               int N, int C);
void wf_residual_layernorm_bwd_input(wf_ctx *c, float *da, float *db, const float *dres,
                                     const float *dln, const float *res, const float *w,
                                     const float *mean, const float *rstd, int N, int C);
void wf_residual_layernorm_bwd(wf_ctx *c, float *da, float *db, float *dw, float *dbias,
                               const float *dres, const float *dln, const float *res,
                               const float *w, const float *mean, const float *rstd, int N, int C);
/* The plan's enum wf_precision (WF_FP32 when c is NULL, as in kernel tests). */
int wf_ctx_precision(wf_ctx *c);

/* out (N,M) = inp (N,K) @ w (K,M) + b (M); b may be NULL (then db is NULL). */
void wf_linear_fwd(wf_ctx *c, float *out, const float *inp, const float *w,
                   const float *b, int N, int K, int M);
void wf_linear_bwd(wf_ctx *c, float *dinp, float *dw, float *db, const float *dout,
                   const float *inp, const float *w, int N, int K, int M);

/* Fused linear + GELU (the compiler forms it from a linear whose output a
 * gelu reads next, as GPT-2's c_fc; compiler/fuse.c):
 *   pre (N,M) = inp (N,K) @ w (K,M) + b (b may be NULL), out = gelu(pre);
 * pre is the gelu's input, kept for backward.  Under a bf16 / fp16 plan both
 * are stored rounded to it, pre before the gelu reads it, exactly as the
 * unfused pair and its rounding calls store them.  Backward, the B half:
 *   dpre = round(dpre + gelu'(pre) * dout) (the gelu's backward), then
 *   dinp += dpre @ w^T;
 * the W half is wf_linear_bwd_weight on dpre. */
void wf_linear_gelu_fwd(wf_ctx *c, float *pre, float *out, const float *inp, const float *w,
                        const float *b, int N, int K, int M);
void wf_linear_gelu_bwd_input(wf_ctx *c, float *dinp, float *dpre, const float *dout,
                              const float *pre, const float *w, int N, int K, int M);

/* The input gradient of a linear whose input is a gelu's output, with the
 * gelu's backward (the compiler pairs GPT-2's c_proj with the gelu before it;
 * compiler/fuse.c):
 *   dpre (N,K) = round(gelu'(pre) * (dout (N,M) @ w^T)),  w (K,M),
 * gelu' applied to the product's fp32 value, d(gelu out) never stored, one
 * rounding to the plan's 16-bit type (none under fp32).  dpre is written,
 * not accumulated (cuBLASLt's DGELU epilogue applies gelu' to the whole sum):
 * the compiler emits it only where dpre is still the zero the step's
 * backward starts from.  The linear's W half is wf_linear_bwd_weight on dout. */
void wf_linear_dgelu_bwd_input(wf_ctx *c, float *dpre, const float *dout, const float *pre,
                               const float *w, int N, int K, int M);

/* Causal self-attention. qkv is (N, 3C): q, k, v side by side, head h of q at
 * columns [h*C/H, (h+1)*C/H); out is (N, C).  att is what forward keeps for
 * backward: the log-sum-exp of every (b, h, t) query row (B*H*T floats; CUDA
 * keeps it in base 2), never the (T, T) probabilities; scratch must hold
 * B*H*T floats.  Backward also takes the forward's output `out` (an
 * activation: 16-bit under act16), unchanged since: it forms D = rowsum(P *
 * dP) = dout . out per query row from it (FlashAttention-2). */
void wf_attention_fwd(wf_ctx *c, float *out, float *att, const float *qkv,
                      int B, int T, int C, int H);
void wf_attention_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout,
                      const float *qkv, const float *out, const float *att, int B, int T, int C,
                      int H);

/* GELU, tanh approximation (as GPT-2). */
void wf_gelu_fwd(wf_ctx *c, float *out, const float *inp, long n);
void wf_gelu_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n);

/* GELU, exact: gelu(x) = x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)), Phi the
 * standard normal CDF (Hugging Face's "gelu", PyTorch's gelu default);
 * backward dinp += (Phi(x) + x phi(x)) * dout.  The conventions of the tanh
 * pair above (storage, accumulation).  No fused linear form: cuBLASLt's GELU
 * epilogues are the tanh approximation only. */
void wf_gelu_erf_fwd(wf_ctx *c, float *out, const float *inp, long n);
void wf_gelu_erf_bwd(wf_ctx *c, float *dinp, const float *inp, const float *dout, long n);

/* out = a + b (the residual connection). */
void wf_add_fwd(wf_ctx *c, float *out, const float *a, const float *b, long n);
void wf_add_bwd(wf_ctx *c, float *da, float *db, const float *dout, long n);

/* Tied LM head and cross-entropy, fused with the loss gradient: with
 * probs = softmax(x @ wte^T), dlogits (N, V) receives
 * (probs - onehot(targets)) * scale and losses[i] = -log probs[i, targets[i]].
 * scale is d(loss)/d(token loss) (wf_loss_scale), fixed between optimizer
 * steps.  Returns the sum of the N losses.  Under a bf16 / fp16 plan
 * (wf_ctx_precision) the logits are rounded to the 16-bit type, the softmax
 * and loss computed from them in fp32 / double, and dlogits rounded to it
 * (stored as 16-bit values under act16, else as floats holding them). */
double wf_lmhead_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                          const float *wte, const int32_t *targets, float scale, int N, int C,
                          int V);
/* dx += dlogits @ wte and dwte += dlogits^T @ x. */
void wf_lmhead_xent_bwd(wf_ctx *c, float *dx, float *dwte, const float *dlogits,
                        const float *x, const float *wte, int N, int C, int V);
/* The head generated programs call (both backends): forward and backward
 * together, chunk by chunk of `chunk` token rows (the compiler's
 * lmhead_chunk_rows), from the backward pass: per chunk the logits (in
 * scratch: chunk x V floats on the CPU, chunk x V values of the activation
 * storage on CUDA) become dlogits as above, then dx += dlogits @ wte and
 * dwte += dlogits^T @ x (dwte NULL: a frozen head, dx alone), so the (N, V)
 * logits never exist whole.  losses and the returned sum as
 * wf_lmhead_xent_fwd's.  A chunk whose targets are all < 0 adds nothing; the
 * CPU skips it (wf_xent_rows_idle, CPU-only: it reads the targets on the
 * host), CUDA computes its zero dlogits (a captured step replays the same
 * launches). */
double wf_lmhead_xent_chunked(wf_ctx *c, float *dx, float *dwte, float *losses, float *scratch,
                              const float *x, const float *wte, const int32_t *targets,
                              float scale, int N, int C, int V, int chunk);
int wf_xent_rows_idle(const int32_t *targets, int n);

/* ---- the LLaMA family (runtime/cpu/llama.c, attention.c) -------------- */

/* RMSNorm: out = w * x / sqrt(mean(x^2) + eps); rstd (N floats) is saved. */
void wf_rmsnorm_fwd(wf_ctx *c, float *out, float *rstd, const float *inp, const float *w,
                    int N, int C, float eps);
void wf_rmsnorm_bwd(wf_ctx *c, float *dinp, float *dw, const float *dout, const float *inp,
                    const float *w, const float *rstd, int N, int C);
/* Rotary position embedding ("rotate half", as Hugging Face LLaMA) on `heads`
 * heads of width hd per row; rows are ld_in / ld_out floats apart and row n is
 * position n % T.  The backward adds the inverse rotation of dout into din. */
void wf_rope_fwd(wf_ctx *c, float *out, int ld_out, const float *in, int ld_in, int N, int T,
                 int heads, int hd, float theta);
void wf_rope_bwd(wf_ctx *c, float *din, int ld_in, const float *dout, int ld_out, int N, int T,
                 int heads, int hd, float theta);
/* SwiGLU: out = silu(gate) * up, elementwise. */
void wf_swiglu_fwd(wf_ctx *c, float *out, const float *gate, const float *up, long n);
void wf_swiglu_bwd(wf_ctx *c, float *dgate, float *dup, const float *gate, const float *up,
                   const float *dout, long n);
/* Grouped-query causal attention.  qk is (N, (H + KVH) * hd): H query heads,
 * then KVH key heads (RoPE already applied); v is (N, KVH * hd); query head h
 * reads key and value head h / (H / KVH).  att (B, H, T, T) keeps the softmax
 * probabilities; out is (N, H * hd); scratch holds T*T floats.  Backward
 * takes the forward's output `out` as wf_attention_bwd does. */
void wf_gqa_attention_fwd(wf_ctx *c, float *out, float *att, const float *qk, const float *v,
                          int B, int T, int H, int KVH, int hd);
void wf_gqa_attention_bwd(wf_ctx *c, float *dqk, float *dv, float *scratch, const float *dout,
                          const float *qk, const float *v, const float *out, const float *att, int B,
                          int T, int H, int KVH, int hd);

/* ---- vision encoder (runtime/cpu/vision.c, attention_prefix.c) ----------- */

/* Patch embedding of a microbatch of uint8 (IH, IW, CH) images (row-major,
 * channels last, as the WVLM format stores them), normalised as SigLIP
 * expects, (v / 255 - 0.5) / 0.5: a stride-p convolution whose weight w is
 * [D, CH, p, p] as PyTorch's Conv2d keeps it, plus the learned position
 * embedding pos [P, D] (the convolution's bias folded in).  Sample b's P =
 * (IH/p)(IW/p) patches, in raster order, are rows b*T + [0, P) of out (B*T,
 * D); its rows past P are set to 0.  scratch: wf_patch_embed_scratch floats.
 * The image has no gradient. */
long wf_patch_embed_scratch(int IH, int IW, int CH, int p);
void wf_patch_embed_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                        const float *pos, int B, int T, int IH, int IW, int CH, int p, int D);
void wf_patch_embed_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                        const uint8_t *image, int B, int T, int IH, int IW, int CH, int p, int D);
/* Self-attention on fused (q,k,v) rows as wf_attention_fwd, where key j is
 * visible to query t iff j <= max(t, prefix - 1): prefix = T is a vision
 * encoder's bidirectional attention, prefix = 0 causal attention. */
void wf_attention_prefix_fwd(wf_ctx *c, float *out, float *att, const float *qkv, int B, int T, int C,
                             int H, int prefix);
void wf_attention_prefix_bwd(wf_ctx *c, float *dqkv, float *scratch, const float *dout, const float *qkv,
                             const float *out, const float *att, int B, int T, int C, int H, int prefix);
/* The hand-off: out's rows [0, P) of each sample are image's, the others
 * text's; backward sends each row's gradient to the input it came from. */
void wf_image_merge_fwd(wf_ctx *c, float *out, const float *text, const float *image, int B, int T,
                        int P, int C);
void wf_image_merge_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, int B, int T, int P,
                        int C);
/* Sequence parallelism: the same, on this tp rank's rows [row0, row0 + rows)
 * of the microbatch's B*T (out, dout, text, image and their gradients hold
 * those rows only; they may start and end inside a sample).  The patch
 * embedding's dw and dpos are this rank's part: the tp group sums them. */
void wf_patch_embed_rows_fwd(wf_ctx *c, float *out, float *scratch, const uint8_t *image, const float *w,
                             const float *pos, long row0, long rows, int T, int IH, int IW, int CH, int p, int D);
void wf_patch_embed_rows_bwd(wf_ctx *c, float *dw, float *dpos, float *scratch, const float *dout,
                             const uint8_t *image, long row0, long rows, int T, int IH, int IW, int CH, int p, int D);
void wf_image_merge_rows_fwd(wf_ctx *c, float *out, const float *text, const float *image, long row0, long rows,
                             int T, int P, int C);
void wf_image_merge_rows_bwd(wf_ctx *c, float *dtext, float *dimage, const float *dout, long row0, long rows,
                             int T, int P, int C);
/* The current microbatch's images, B * IH * IW * CH bytes (a VLM plan). */
const uint8_t *wf_images(wf_ctx *c);

/* ---- tensor parallelism (runtime/cpu/elementwise.c, xent.c; common/tp.c) */

/* Vocabulary-parallel embedding: this rank holds rows [v_begin, v_begin + VL)
 * of wte; tokens outside them contribute zeros (the tp_reduce after it sums). */
void wf_vocab_embed_fwd(wf_ctx *c, float *out, const int32_t *tok, const float *wte_part,
                        int v_begin, int VL, int N, int C);
void wf_vocab_embed_bwd(wf_ctx *c, float *dwte_part, const float *dout, const int32_t *tok,
                        int v_begin, int VL, int N, int C);
/* out = in + wpe[t] for rows [row0, row0 + rows) of the (B*T, C) microbatch. */
void wf_pos_add_fwd(wf_ctx *c, float *out, const float *in, const float *wpe, long row0,
                    int rows, int T, int C);
void wf_pos_add_bwd(wf_ctx *c, float *din, float *dwpe, const float *dout, long row0,
                    int rows, int T, int C);
/* out = in + b per row. */
void wf_bias_add_fwd(wf_ctx *c, float *out, const float *in, const float *b, int rows, long C);
void wf_bias_add_bwd(wf_ctx *c, float *din, float *db, const float *dout, int rows, long C);
/* The conjugate collectives of the tp group.  n counts activation values
 * (floats, or 16-bit values under act16): for copy and reduce the whole
 * tensor, for gather and scatter this rank's share.  Sums are fp32 either
 * way (under act16 through the float staging buffer, then rounded once). */
void wf_tp_copy_fwd(wf_ctx *c, float *out, const float *in, long n);
void wf_tp_copy_bwd(wf_ctx *c, float *din, float *dout, long n);
void wf_tp_reduce_fwd(wf_ctx *c, float *out, const float *in, long n);
void wf_tp_reduce_bwd(wf_ctx *c, float *din, float *dout, long n);
void wf_tp_gather_fwd(wf_ctx *c, float *out, const float *in, long n);
void wf_tp_gather_bwd(wf_ctx *c, float *din, float *dout, long n);
void wf_tp_scatter_fwd(wf_ctx *c, float *out, const float *in, long n);
void wf_tp_scatter_bwd(wf_ctx *c, float *din, float *dout, long n);
int wf_tp_rank(wf_ctx *c);
/* Vocabulary-parallel LM head and cross-entropy: dlogits (N, VL) of this
 * rank's slice stay local (as wf_lmhead_xent_fwd's); row maxima and sums are
 * all-reduced.  Columns past `vocab` are padding: their dlogits are 0. */
double wf_vocab_xent_fwd(wf_ctx *c, float *dlogits, float *losses, const float *x,
                         const float *wte_part, const int32_t *targets, float scale, int N, int C,
                         int VL, int v_begin, int vocab);
void wf_vocab_xent_bwd(wf_ctx *c, float *dx, float *dwte_part, const float *dlogits,
                       const float *x, const float *wte_part, int N, int C, int VL);
/* The vocabulary-parallel form of wf_lmhead_xent_chunked (scratch: chunk x
 * VL logits; the collectives per chunk, on the chunk's rows, in c->comm). */
double wf_vocab_xent_chunked(wf_ctx *c, float *dx, float *dwte_part, float *losses, float *scratch,
                             const float *x, const float *wte_part, const int32_t *targets,
                             float scale, int N, int C, int VL, int v_begin, int vocab, int chunk);

/* ---- split backward for zero-bubble schedules (beside each op's kernels):
 * *_bwd_input ("B") and *_bwd_weight ("W") add up to the combined kernel.
 * Ops with no parameters have only a B; embedding lookups only a W. */
void wf_linear_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *w, int N, int K,
                         int M);
void wf_linear_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout, const float *inp,
                          int N, int K, int M);
void wf_layernorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C);
void wf_layernorm_bwd_weight(wf_ctx *c, float *dw, float *db, const float *dout, const float *inp,
                             const float *mean, const float *rstd, int N, int C);
/* V here is the rows of wte this rank holds (V without tensor parallelism);
 * dlogits come from the forward. */
void wf_lmhead_xent_bwd_input(wf_ctx *c, float *dx, const float *dlogits, const float *wte, int N,
                              int C, int V);
void wf_lmhead_xent_bwd_weight(wf_ctx *c, float *dwte, const float *dlogits, const float *x, int N,
                               int C, int V);
void wf_pos_add_bwd_input(wf_ctx *c, float *din, const float *dout, int rows, int C);
void wf_pos_add_bwd_weight(wf_ctx *c, float *dwpe, const float *dout, long row0, int rows, int T,
                           int C);
void wf_bias_add_bwd_weight(wf_ctx *c, float *db, const float *dout, int rows, long C);
void wf_rmsnorm_bwd_input(wf_ctx *c, float *dinp, const float *dout, const float *inp,
                          const float *w, const float *rstd, int N, int C);
void wf_rmsnorm_bwd_weight(wf_ctx *c, float *dw, const float *dout, const float *inp,
                           const float *rstd, int N, int C);

/* ---- 16-bit storage, emulated on the CPU (runtime/cpu/precision.c) ------
 * Under bf16 / fp16 the arenas stay float and every value stored in a 16-bit
 * tensor is rounded to the nearest bf16 / fp16 value (ties to even; fp16
 * overflows to +-inf from 65520 up, has subnormals; NaN stays NaN). */
enum wf_precision { WF_FP32, WF_BF16, WF_FP16 };
uint16_t wf_bf16_bits(float x);
float wf_bf16_value(uint16_t h);
uint16_t wf_fp16_bits(float x);
float wf_fp16_value(uint16_t h);
float wf_bf16(float x);                           /* x rounded to bf16 */
float wf_fp16(float x);                           /* x rounded to fp16 */
void wf_to_bf16(wf_ctx *c, float *x, long n);     /* rounds n values in place */
void wf_to_fp16(wf_ctx *c, float *x, long n);
void wf_round_copy(int precision, float *dst, const float *src, long n);

/* ---- the program the compiler emits ----------------------------------- */

/* plan.comm: NCCL on its own streams, or host-staged MPI (ranks may share a GPU) */
enum wf_comm { WF_COMM_NCCL, WF_COMM_MPI };

enum wf_init { WF_INIT_ZEROS, WF_INIT_ONES, WF_INIT_NORMAL };
enum wf_split { WF_SPLIT_NONE, WF_SPLIT_ROWS, WF_SPLIT_COLS };

typedef struct wf_param {
    const char *name;   /* Hugging Face GPT-2 name, e.g. "h.0.attn.c_attn.weight" */
    long offset;        /* in floats, into the parameter (and gradient) arena */
    long numel;
    int ndim;
    long shape[4];
    enum wf_init init;
    float std;          /* for WF_INIT_NORMAL */
    int decay;          /* 1: weight decay applies (matrices), 0: biases, norms */
    int bucket;         /* bucket holding this parameter's gradient; -1: frozen (weft.vlm's
                           freeze), no gradient or optimizer state, past grad_numel */
    /* tensor parallelism: shape[] is this rank's part of a gshape[] tensor */
    int split;          /* WF_SPLIT_NONE (replicated), WF_SPLIT_ROWS, WF_SPLIT_COLS */
    int sections;       /* column blocks split separately (3 for fused q, k, v) */
    long gshape[4];     /* the whole tensor (rows past gshape[0] are vocabulary padding) */
    int tp_partial;     /* replicated, but each tp rank holds a partial gradient (sp) */
    int tied;           /* a copy of a parameter another pipeline stage owns (the LM
                           head's wte): gradients summed with it, saved by the owner */
    int transposed;     /* checkpoints hold it transposed, (out, in) as Hugging Face
                           nn.Linear (llama); here it is (in, out) like every linear */
    int qkv;            /* checkpoints hold its q, k and v thirds (of the output features)
                           as three tensors, "qkv_proj" in its name read as q_proj,
                           k_proj and v_proj (SigLIP's attention in a VLM) */
} wf_param;

/* A tensor of the Hugging Face model that Weft's does not compute with
 * (SigLIP's post_layernorm; its patch convolution's bias, which Weft folds
 * into the position embedding; LLaVA's untied lm_head over a GPT-2):
 * checkpoints hold it filled with value, or, when copy names a parameter of
 * this stage, that parameter's tensor; a load does not read it back (the
 * manifest's checksums keep it as written). */
typedef struct wf_hf_const {
    const char *name;
    int ndim;
    long shape[4];
    float value;
    const char *copy;
} wf_hf_const;

/* A fused gradient bucket: a contiguous range of the gradient arena. */
typedef struct wf_bucket {
    long offset;        /* in floats */
    long numel;
    long buffer;        /* ZeRO >= 2: its gradient buffer in the bucket-buffer arena */
    long gather;        /* ZeRO-3: where its parameters are all-gathered (gather arena) */
} wf_bucket;

/* One micro-step of the compiled schedule. */
typedef void (*wf_stage_fn)(wf_ctx *c);

typedef struct wf_program {
    const char *plan;        /* plan file the program was compiled from */
    const char *plan_hash;   /* hex digest of the compiled plan */
    int stage, n_stages;
    int dp, tp, pp;
    int sp;                  /* sequence parallelism in the tp group */
    int world;               /* ranks in the job */
    int bind;                /* cluster.bind: WF_BIND_* (weft/bind.h; 0 "auto") */
    const wf_axis *axes;     /* the mesh (weft/mesh.h), fastest axis first, as */
    int n_axes;              /* mesh.order laid it out; dp, tp, pp are its sizes */
    /* model */
    int layers, hidden, heads, seq, vocab;
    const char *family;      /* "llama", or NULL: gpt2 */
    int kv_heads, ffn_hidden;          /* llama */
    double rope_theta, norm_eps;       /* llama */
    /* a VLM (weft.vlm): the data is a WVLM file (common/data_vlm.h) of
     * image_h x image_w x image_c uint8 images cut into image_positions
     * patches of patch x patch; 0 image_positions: text only */
    int image_h, image_w, image_c, patch, image_positions, image_token;
    /* batch */
    int micro;               /* sequences per microbatch per rank */
    int accum;               /* microbatches per step per rank */
    int global_batch;        /* sequences per optimizer step, all ranks */
    /* parameters and buckets */
    const wf_param *params; int n_params;
    const wf_bucket *buckets; int n_buckets;
    long param_numel;        /* size of the parameter / gradient arena, floats */
    long act_numel;          /* size of the activation arena, floats */
    long dact_numel;         /* one activation-gradient set: one chunk's gradients,
                                packed by live interval, floats */
    long scratch_numel;      /* kernel scratch, floats */
    long comm_numel;         /* staging for tensor-parallel collectives, floats */
    int slots;               /* activation slots (microbatches in flight on this stage) */
    int dact_sets;           /* activation-gradient sets (backwards live at once) */
    long act_region_numel;   /* the recompute region, once after the slots, floats */
    int recv_buffers;        /* received activations waiting for their forward */
    long recv_numel;         /* floats in one of them */
    int weight_delay;        /* 1: PipeDream-2BW, gradients applied one step late */
    int zero;                /* ZeRO stage over the dp group: 1 optimizer state,
                                2 + gradients, 3 + parameters */
    int offload_optimizer;   /* AdamW moments and update in host memory */
    int precision;           /* enum wf_precision: WF_FP32 (0), WF_BF16, WF_FP16 */
    /* fp16 loss scaling (runtime/common/loss_scale.c): a static scale, or
     * DeepSpeed's dynamic one (halve after `hysteresis` overflows, never
     * below scale_min; double after scale_window overflow-free steps) */
    int scale_dynamic, scale_window, scale_hysteresis;
    double scale_initial, scale_min;
    int offload_params;      /* ZeRO-3: the parameter shard in host memory */
    long grad_numel;         /* the gradient arena, floats: ZeRO >= 2 its bucket buffers, else the
                                parameter arena's trainable prefix (frozen parameters follow it) */
    long gather_numel;       /* ZeRO-3: the gather arena (parameters in use; frozen ones whole at its end), floats */
    const long *shards;      /* zero: bucket k's dp shard r is [shards[k*(dp+1)+r],
                                shards[k*(dp+1)+r+1]) relative to the bucket */
    /* optimizer and schedule */
    double lr, min_lr, beta1, beta2, eps, weight_decay, clip;
    int warmup, steps;
    uint64_t seed;
    const char *data_train;
    int log_every, ckpt_every;
    double fault_timeout_s;  /* fault.timeout_s: a wait on a peer longer than this ends the job */
    int chunks;              /* model chunks over all stages (pp x virtual), to name messages */
    double flops_per_token;  /* 6N + 12 L h s, for MFU */
    /* the compiled step: microbatches, gradient reductions, optimizer */
    void (*step)(wf_ctx *c);
    /* PipeDream-2BW without flush (pp > 1): `step` is the steady step, which
     * finishes batch `step` and starts the next; the prologue fills the pipeline
     * before it, the epilogue replaces it before a checkpoint and at the end
     * (finishes its batch, starts none). NULL for every other schedule. */
    void (*prologue)(wf_ctx *c);
    void (*epilogue)(wf_ctx *c);
    /* what the metrics are measured against (runtime/common/metrics.c) */
    double peak_tflops;      /* one device's peak at the plan's precision (cluster) */
    double planned_bytes;    /* the compiler's memory plan for one rank of this stage */
    /* plan.comm: how --backend cuda communicates (the CPU backend has MPI only) */
    int comm;                /* enum wf_comm: WF_COMM_NCCL (0) or WF_COMM_MPI */
    /* 16-bit activation storage (bf16 / fp16; see "Activation storage"
     * below): 1 stores activations as 16-bit values */
    int act16;
    long cast_numel;         /* act16 under ZeRO-3: the cast buffer (wf_cuda_cast_buffer), floats */
    long weight16_numel;     /* act16 otherwise: the GEMM weights' 16-bit copies
                                (wf_cuda_weight16_slot), floats */
    long stage16_numel;      /* act16 on the CPU: the float staging of one kernel
                                call's activation operands (runtime/cpu/stage16.h) */
    /* 1: the tensor-parallel collectives carry the plan's 16-bit type (bf16 /
     * fp16 plans; the compiler's tp_comm16, plan.tp_comm): act16 storage
     * as it is, float activations (the CPU) packed into 16 bits around each
     * collective; sums in the 16-bit type (coll.h).  0: fp32 sums */
    int tp_comm16;
    /* 1: weight gradients accumulate in fp32 under a bf16 / fp16 plan
     * (plan.grad_accum = "fp32"): neither the generated code nor the
     * optimizer step rounds them.  0: rounded to the 16-bit type after every
     * accumulation and after the data-parallel sum (fp32 plans: no rounding) */
    int grad_accum32;
    /* 1: the working parameters are stored in the plan's 16-bit type (bf16 /
     * fp16 bits, 2 bytes each; the compiler's param16.c): the parameter
     * arena (and 2BW's second version) holds uint16_t, the fp32 masters stay
     * the truth, and the generated code widens an op's parameters into a
     * float scratch of wscratch_numel floats before its kernels
     * (wf_widen_params; on CUDA the GEMMs read their weights' bits in
     * place).  0: the arena holds floats (rounded values). */
    int param16;
    long wscratch_numel;
    /* 1: the weight gradients are stored in the plan's 16-bit type (the
     * compiler's grad16.c; gradients accumulated in that type; both
     * backends, PipeDream-2BW too, under ZeRO 1-3 as well): the gradient arena (ZeRO-2 and 3: the bucket buffers)
     * holds uint16_t, 2 bytes a gradient.  The generated code widens an
     * op's parameter gradients into gscratch_numel floats before its
     * backward kernels (wf_widen_grads) and stores them back rounded
     * (wf_narrow_grads); the data-parallel sums and the tp / tied sums after
     * them run on floats in gstage_numel floats of staging and are rounded
     * once (runtime/common/grad16.c).  0: the arena holds floats. */
    int grad16;
    long gscratch_numel, gstage_numel;
    /* 1: the data-parallel bucket all-reduce, or ZeRO's reduce-scatter,
     * carries the plan's 16-bit type (plan.dp_comm; MPI or NCCL): each bucket
     * packed into 16 bits in its first half through dp16_numel floats of
     * staging, summed in the type (coll.h), widened back (dp_comm.c).
     * 0: fp32 */
    int dp_comm16;
    long dp16_numel;
    const char *hf_config;   /* config.json's text (the compiler's), copied into checkpoints */
    const wf_hf_const *hf_consts;  /* stage 0 writes them into every checkpoint */
    int n_hf_consts;
} wf_program;

/* Activation storage.  Under act16 every activation tensor and activation
 * gradient (a kernel argument pointing into the activation or activation-
 * gradient arena, or a received pipeline buffer, except the saved state
 * below) holds n values of the plan's 16-bit type packed two per
 * float: it takes (n + 1) / 2 floats of its arena, and kernels read and write
 * it as bf16 / fp16 bits (runtime/cuda/storage.cuh), rounding each value
 * they store (ties to even), so the generated code calls no wf_to_bf16 /
 * wf_to_fp16 on activations.  The `float *` of the kernel signatures then
 * only carries the address.  On CUDA the LM head's logits and dlogits are
 * 16-bit too (the kernels write them in the 16-bit type on every backend, see
 * wf_lmhead_xent_fwd), the chunked head's chunk of them in kernel scratch.
 * What stays float: the other state a forward saves for its backward
 * (layernorm mean and rstd, RMSNorm rstd, attention's att / log-sum-exp),
 * per-token losses, the rest of kernel scratch, parameters, gradients and optimizer state (and the tensor-
 * parallel collectives' staging under tp_comm16 = 0: their sums are fp32,
 * runtime/common/tp.c).
 * The CPU kernels compute in floats: under act16 each entry point widens
 * its 16-bit operands into float staging, runs, and rounds its outputs back
 * (runtime/cpu/stage16.h); there the LM head's dlogits stay floats.
 * Without act16 (fp32 plans, and 16-bit plans where the compiler keeps float
 * storage) activations are floats whose values the generated code rounds to
 * the 16-bit type after each kernel. */
int wf_ctx_act16(wf_ctx *c);            /* 0 when c is NULL, as in kernel tests */
/* x lies among the frozen weights (weft.vlm's freeze), fp32 values under a
 * 16-bit plan: a GEMM reads them unrounded (0 when c is NULL) */
int wf_frozen_weight(wf_ctx *c, const void *x);

/* Arena access for generated code. */
float *wf_param_ptr(wf_ctx *c, long off);
/* param16: parameters at arena offsets off0 (n0 values) and off1 (n1; 0
 * for none) widened to floats in the scratch: returns it, the first at 0 and
 * the second at |n0| rounded up to 16 floats.  n0 < 0 (CUDA): the first is a
 * GEMM weight of -n0 values, left in 16 bits where it is stored; its slot in
 * the scratch is not written, and the GEMMs given that address read the
 * stored bits instead (runtime/cuda/cast.c). */
const float *wf_widen_params(wf_ctx *c, long off0, long n0, long off1, long n1);
float *wf_grad_ptr(wf_ctx *c, long off);
/* grad16: the gradients at offsets off0 (n0 values) and off1 (n1; 0 for
 * none) of the gradient arena (ZeRO-2: of the bucket buffers) widened to
 * floats in the scratch: returns it, the first at 0 and the second at n0
 * rounded up to 16 floats.  wf_narrow_grads stores the scratch back,
 * rounded to the 16-bit type. */
float *wf_widen_grads(wf_ctx *c, long off0, long n0, long off1, long n1);
void wf_narrow_grads(wf_ctx *c, long off0, long n0, long off1, long n1);
float *wf_act_ptr(wf_ctx *c, long off);
float *wf_dact_ptr(wf_ctx *c, long off);
float *wf_scratch(wf_ctx *c);
const int32_t *wf_tokens(wf_ctx *c);   /* current microbatch inputs, B*T */
const int32_t *wf_targets(wf_ctx *c);  /* next-token targets, B*T */
float wf_loss_scale(wf_ctx *c);        /* d(global mean loss)/d(token loss) */
void wf_add_loss(wf_ctx *c, double loss_sum);
float *wf_losses(wf_ctx *c);           /* N floats of per-token loss */

/* --profile (runtime/common/profile.c): the generated code names each op's
 * class before calling it; the time until the next switch is that class's. */
enum {
    WF_PROF_GEMM, WF_PROF_ATTENTION, WF_PROF_NORM, WF_PROF_ELEMENTWISE, WF_PROF_CLASSIFIER,
    WF_PROF_OPTIMIZER, WF_PROF_COMM, WF_PROF_OTHER, WF_PROF_CLASSES,
    WF_PROF_ENCODER = 16  /* or-ed into a class: a VLM's vision encoder / projector op (also summed apart) */
};
void wf_prof(wf_ctx *c, int cls);

/* The step's building blocks, called by the generated step function. */
void wf_micro_begin(wf_ctx *c, int m);  /* loads microbatch m's tokens, zeroes act. grads */
void wf_buckets_wait(wf_ctx *c);        /* waits for every bucket's all-reduce */
void wf_optimizer_step(wf_ctx *c);      /* clip, AdamW, zero gradients */

/* Pipeline parallelism.  Each in-flight microbatch keeps its activations (and
 * their gradients) in a slot; messages go to the neighbouring stages. */
void wf_step_begin(wf_ctx *c);          /* loads every microbatch of the step */
void wf_use_micro(wf_ctx *c, int m);    /* wf_tokens / wf_targets now give microbatch m */
void wf_slot_begin(wf_ctx *c, int slot);/* zeroes the slot's activation gradients */
float *wf_act_slot(wf_ctx *c, int slot);
float *wf_dact_slot(wf_ctx *c, int slot);
float *wf_act_region(wf_ctx *c);   /* the stage's recompute region (after the slots) */
const int32_t *wf_tokens_of(wf_ctx *c, int m);
const int32_t *wf_targets_of(wf_ctx *c, int m);
void wf_send(wf_ctx *c, const float *buf, long n, int stage, int tag);
void wf_recv(wf_ctx *c, float *buf, long n, int stage, int tag);
void wf_sendrecv(wf_ctx *c, const float *sbuf, long sn, int sstage, int stag,
                 float *rbuf, long rn, int rstage, int rtag);
void wf_tied_grads(wf_ctx *c);
float *wf_recv_buffer(wf_ctx *c, int i);
/* Pipeline scatter/gather (Megatron): a message of n floats (n % tp == 0)
 * travels as tp slices, one from each tp rank to its peer; wf_pipe_slice is
 * this rank's slice of buf, wf_pipe_gather all-gathers the slices of the
 * received message in place over the tp group. */
float *wf_pipe_slice(wf_ctx *c, float *buf, long n);
void wf_pipe_gather(wf_ctx *c, float *buf, long n);
void wf_copy(float *dst, const float *src, long n);
void wf_zero(float *dst, long n);       /* activation recompute: a block's gradients */          /* sums the tied wte gradients of first and last stage */

/* PipeDream-2BW without flush (runtime/common/twobw.c).  The instruction lists
 * name microbatches in a frame where the batch being finished is 1 (m in
 * [accum, 2 accum)) and the next one 2; wf_use_micro maps them to the real
 * batch, its tokens (double-buffered by batch parity) and its weight version. */
void wf_prologue_begin(wf_ctx *c);      /* loads the first batch */
void wf_epilogue_begin(wf_ctx *c);      /* like wf_step_begin, but loads nothing */
/* The tied wte: the last stage sends each batch's gradient to stage 0 (non-
 * blocking), stage 0 adds it before its OPTIM and sends the new version, which
 * the last stage receives before the first forward that uses it.  m names
 * the batch (frame) the message belongs to. */
void wf_tied_send_grad(wf_ctx *c);
void wf_tied_recv_grad(wf_ctx *c);
void wf_tied_send_weights(wf_ctx *c, int m);
void wf_tied_recv_weights(wf_ctx *c, int m);

/* Measured traces (--trace FILE): each schedule instruction's start and end.
 * kind: 'F' forward, 'B' backward (or its input half), 'W' weight half,
 * 'O' optimizer, 'a' / 'g' sending an activation / a gradient. */
double wf_trace_now(wf_ctx *c);        /* 0 when not tracing */
void wf_trace_event(wf_ctx *c, char kind, int m, int chunk, double start);
/* The instruction running, for the watchdog's message (runtime/common/
 * watchdog.c): wf_trace_now's time; wf_trace_event ends it. */
double wf_instr_begin(wf_ctx *c, char kind, int m, int chunk);
#define WF_TRACED(c, kind, m, chunk, call)                                 \
    do {                                                                   \
        double wf_t0_ = wf_instr_begin((c), (kind), (m), (chunk));         \
        call;                                                              \
        wf_trace_event((c), (kind), (m), (chunk), wf_t0_);                 \
    } while (0)

/* Data parallelism: start bucket k's non-blocking all-reduce now that its last
 * gradient is written; drive outstanding requests during backward. */
void wf_bucket_start(wf_ctx *c, int k);
void wf_progress(wf_ctx *c);

/* ZeRO >= 2 (runtime/common/zero_grads.c): bucket k's buffer is complete:
 * reduce-scatter it over dp; the wait adds this rank's part into its gradient
 * shard and zeroes the buffer for the next bucket that uses it. */
void wf_grad_bucket_start(wf_ctx *c, int k);
void wf_grad_bucket_wait(wf_ctx *c, int k);
/* Zero-bubble under ZeRO >= 2: a norm's or bias's parameter gradients, which
 * B wrote into the microbatch's activation-gradient set (src, floats), added
 * into their bucket (g: a float gradient, or its widened scratch) in W. */
void wf_add_grads(wf_ctx *c, float *g, const float *src, long n);
/* ZeRO-3 (runtime/common/zero_params.c): all-gather bucket k's parameter
 * shards into its gather buffer; wait before the first use. */
void wf_gather_start(wf_ctx *c, int k);
void wf_gather_wait(wf_ctx *c, int k);

/* Entry point of every generated program: parses arguments, brings up MPI,
 * allocates the arenas once, and runs the training loop. */
int wf_main(int argc, char **argv, const wf_program *p);

#ifdef __cplusplus
}
#endif

#endif
