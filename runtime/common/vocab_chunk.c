/* vocab_chunk.c: the vocabulary-parallel head's chunk set-up and statistics
 * (vocab_chunk.h), on either backend's local pieces (kernels_tp.h). */
#include "vocab_chunk.h"

#include "kernels_tp.h"

wf_vocab_chunks wf_vocab_chunks_of(wf_ctx *c, int N, int VL, int v_begin, int vocab, int chunk) {
    wf_vocab_chunks k;
    k.chunk = chunk < 1 || chunk > N ? N : chunk;
    k.valid = vocab - v_begin;
    k.valid = k.valid < 0 ? 0 : k.valid > VL ? VL : k.valid;
    k.precision = wf_ctx_precision(c);
    k.rowmax = c->comm;
    k.stats = (double *)(void *)(c->comm + ((k.chunk + 1) & ~1));  /* 8-byte aligned */
    return k;
}

void wf_vocab_chunk_stats(wf_ctx *c, const wf_vocab_chunks *k, float *logits, const float *x,
                          const float *wte_part, const int32_t *targets, int n, int C, int VL, int v_begin) {
    wf_vocab_logits(c, logits, k->rowmax, x, wte_part, n, C, VL, k->valid, k->precision);
    c->coll->allreduce(c, WF_GROUP_TP, k->rowmax, n, WF_F32, WF_MAX, NULL);
    wf_vocab_exp(c, logits, k->stats, k->rowmax, targets, n, VL, v_begin, k->valid);
    c->coll->allreduce(c, WF_GROUP_TP, k->stats, 2L * n, WF_F64, WF_SUM, NULL);
}
