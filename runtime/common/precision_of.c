/* precision_of.c: the plan's storage precision, for kernels that round
 * inside (the fused residual + layernorm); shared by both backends. */
#include "internal.h"

int wf_ctx_precision(wf_ctx *c) { return c ? c->p->precision : WF_FP32; }
