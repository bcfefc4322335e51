/* dlogits_row.h: the last step of the CPU's fused classifier, shared by the
 * whole and the vocabulary-parallel LM head (xent.c). */
#ifndef WEFT_CPU_DLOGITS_ROW_H
#define WEFT_CPU_DLOGITS_ROW_H

/* In place: exponentials e -> (e * inv - onehot(target)) * scale, where inv
 * is 1 / (the row's sum of exponentials); a target outside [0, V) (another
 * rank's vocabulary slice) subtracts nothing.  Under precision WF_BF16 /
 * WF_FP16 each gradient is then rounded to that type (stored 16-bit). */
void wf_dlogits_row(float *row, float inv, int target, float scale, int V, int precision);

#endif
