/* kernels_tp.h: the local pieces of the vocabulary-parallel cross-entropy,
 * put together with collectives by runtime/common/tp.c. */
#ifndef WEFT_KERNELS_TP_H
#define WEFT_KERNELS_TP_H
#include "weft/rt.h"

#ifdef __cplusplus
extern "C" {
#endif

void wf_vocab_logits(float *logits, float *rowmax, const float *x, const float *wte_part,
                     int N, int C, int VL, int valid);
void wf_vocab_exp(float *logits, double *stats, const float *rowmax, const int32_t *targets,
                  int N, int VL, int v_begin, int valid);
double wf_vocab_normalize(float *probs, float *losses, const double *stats, int N, int VL);
#ifdef __cplusplus
}
#endif
#endif
