/* softmax_rows.h: the causal softmax of one head's (T, T) scores and its
 * backward, shared by the GPT-2 and the grouped-query attention kernels. */
#ifndef WEFT_CPU_SOFTMAX_ROWS_H
#define WEFT_CPU_SOFTMAX_ROWS_H

/* In place: row t becomes the softmax over keys 0..t, zeros after. */
void wf_causal_softmax_rows(float *p, int T);
/* In place: dP becomes dS = P * (dP - rowsum(P * dP)); zeros above the diagonal. */
void wf_softmax_bwd_rows(float *dp, const float *p, int T);

#endif
