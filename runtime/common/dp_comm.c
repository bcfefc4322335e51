/* dp_comm.c: 16-bit data-parallel gradient sums (plan.dp_comm = "bf16" /
 * "fp16"; the compiler allows them without ZeRO, on the CPU backend and on
 * CUDA with comm = "mpi", whose gradients are managed memory the host reads
 * after a device sync; over NCCL later).  A
 * bucket's fp32 gradients are packed into 16 bits in place, in the bucket's
 * first half (value i goes to bytes 2i, which a forward walk has read
 * already), all-reduced in the type (coll.h: each add rounds to it), and
 * widened back in place by a backward walk (value i goes to bytes 4i, whose
 * 16-bit values 2i and 2i + 1 it has read already).  Each rank's gradient
 * rounds once to the type, each partial sum once more; the optimizer step
 * (step.c) rounds the reduced gradient to the type as it does after fp32 sums. */
#include <stdint.h>
#include <string.h>

#include "internal.h"
#include "precision_bits.h"

static int bf16(wf_ctx *c) { return wf_ctx_precision(c) == WF_BF16; }

/* the floats and the 16-bit values share the bytes: every access goes
 * through memcpy, so no aliasing rule lets the compiler reorder them */
void wf_dp16_pack(wf_ctx *c, float *g, long n) {
    unsigned char *b = (unsigned char *)g;
    int bf = bf16(c);
    for (long i = 0; i < n; i++) {
        float v;
        memcpy(&v, b + 4 * i, 4);
        uint16_t h = bf ? wf_hd_bf16_bits(v) : wf_hd_fp16_bits(v);
        memcpy(b + 2 * i, &h, 2);
    }
}

void wf_dp16_unpack(wf_ctx *c, float *g, long n) {
    unsigned char *b = (unsigned char *)g;
    int bf = bf16(c);
    for (long i = n - 1; i >= 0; i--) {
        uint16_t h;
        memcpy(&h, b + 2 * i, 2);
        float v = bf ? wf_hd_bf16_value(h) : wf_hd_fp16_value(h);
        memcpy(b + 4 * i, &v, 4);
    }
}
