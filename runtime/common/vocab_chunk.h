/* vocab_chunk.h: the vocabulary-parallel LM head's set-up and the softmax
 * statistics of a chunk of its token rows, shared by the whole head
 * (tp.c's wf_vocab_xent_fwd, one chunk) and both backends' fused, chunked
 * heads (runtime/cpu/xent.c, runtime/cuda/xent_vocab.c: wf_vocab_xent_chunked). */
#ifndef WEFT_VOCAB_CHUNK_H
#define WEFT_VOCAB_CHUNK_H

#include "internal.h"

typedef struct wf_vocab_chunks {
    int chunk;      /* token rows per chunk (all N when the one asked for is out of range) */
    int valid;      /* this rank's columns that hold vocabulary (the rest are padding) */
    int precision;  /* the plan's: 16-bit plans round the logits and dlogits */
    float *rowmax;  /* c->comm: a chunk's global row maxima (floats), */
    double *stats;  /* then its 2 x chunk doubles: sums of exponentials, target logits */
} wf_vocab_chunks;

/* this rank's share [v_begin, v_begin + VL) of a vocabulary of vocab words,
 * N token rows in chunks of chunk (compiler/memory.c sizes c->comm for a
 * whole microbatch's statistics) */
wf_vocab_chunks wf_vocab_chunks_of(wf_ctx *c, int N, int VL, int v_begin, int vocab, int chunk);

/* rows of the chunk that starts at row r0 */
static inline int wf_vocab_chunk_rows(const wf_vocab_chunks *k, int N, int r0) {
    return N - r0 < k->chunk ? N - r0 : k->chunk;
}

/* n rows: the local logits into logits (n x VL, padding -inf), then the
 * rows' maxima and their sums of exponentials and target logits, each
 * all-reduced over the tp group, into k->rowmax and k->stats */
void wf_vocab_chunk_stats(wf_ctx *c, const wf_vocab_chunks *k, float *logits, const float *x,
                          const float *wte_part, const int32_t *targets, int n, int C, int VL, int v_begin);

#endif
