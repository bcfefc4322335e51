/* xent_vocab.c: the vocabulary-parallel LM head fused and chunked on CUDA
 * (weft/rt.h's wf_vocab_xent_chunked; runtime/cpu/xent.c has the CPU's):
 * xent.cu's local pieces a chunk of token rows at a time, with the chunk's
 * row maxima and sums all-reduced over the tp group between them
 * (runtime/common/vocab_chunk.c, as tp.c's wf_vocab_xent_fwd for the whole
 * microbatch and the CPU's chunked head use them).
 * Host code (the collectives and c->comm are the context's, internal.h),
 * so it lives beside the kernels rather than in them. */
#include "cuda_rt.h"
#include "internal.h"
#include "kernels_tp.h"
#include "vocab_chunk.h"

/* Per chunk: the local logits into scratch (chunk x VL in activation
 * storage), maxima all-reduced, local sums of exponentials and the target
 * logits all-reduced, dlogits and losses in place, then dx (partial over the
 * vocabulary: the tp_copy before the head sums it) and dwte_part.  Every
 * chunk runs, even one without a loss position (the CPU skips those; here
 * the targets are on the device, and a captured step replays the same
 * launches and collectives every step): its dlogits are zeros.  The token
 * losses are summed once over all N, as the unchunked head sums them. */
double wf_vocab_xent_chunked(wf_ctx *c, float *dx, float *dwte_part, float *losses, float *scratch,
                             const float *x, const float *wte_part, const int32_t *targets,
                             float scale, int N, int C, int VL, int v_begin, int vocab, int chunk) {
    wf_vocab_chunks k = wf_vocab_chunks_of(c, N, VL, v_begin, vocab, chunk);
    for (int r0 = 0; r0 < N; r0 += k.chunk) {
        int n = wf_vocab_chunk_rows(&k, N, r0);
        const float *xc = wf_cuda_act_at(c, x, (long)r0 * C);
        float *dxc = (float *)wf_cuda_act_at(c, dx, (long)r0 * C);
        wf_vocab_chunk_stats(c, &k, scratch, xc, wte_part, targets + r0, n, C, VL, v_begin);
        wf_cuda_vocab_dlogits_rows(c, scratch, losses + r0, k.rowmax, k.stats, targets + r0, scale, n, VL,
                                   v_begin, k.precision);
        wf_lmhead_xent_bwd_input(c, dxc, scratch, wte_part, n, C, VL);
        if (dwte_part) wf_lmhead_xent_bwd_weight(c, dwte_part, scratch, xc, n, C, VL);
    }
    return wf_cuda_loss_sum(c, losses, N, "wf_vocab_xent_chunked");
}
