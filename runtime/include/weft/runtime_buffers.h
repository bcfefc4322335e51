/* weft/runtime_buffers.h: the runtime's own buffers beside the planned
 * arenas, their sizes in one place.  The runtime allocates them (runtime/cuda
 * at its first use of each, in the eager warm-up step: a captured step
 * allocates nothing) and the compiler's memory model counts them
 * (compiler/memory.c; `weft check`'s "runtime bufs" row), so the plan and the
 * allocations cannot drift apart. */
#ifndef WEFT_RUNTIME_BUFFERS_H
#define WEFT_RUNTIME_BUFFERS_H

/* gemm.cu: cuBLASLt's workspace, one per process. */
#define WF_CUBLASLT_WORKSPACE_BYTES ((size_t)32 << 20)

/* colsum.cu: the partial column sums of one call at a time (4 MiB), used
 * once a sum has more rows than one chunk of at least WF_COLSUM_MIN_CHUNK
 * (colsum.cuh): tokens per rank past that. */
#define WF_COLSUM_SCRATCH_FLOATS (1L << 20)
#define WF_COLSUM_MIN_CHUNK 64

/* linear.cu: act16's DGELU backward when cuBLASLt refuses the epilogue: a
 * float buffer of at most this many floats (a block of rows at a time). */
#define WF_DGELU_FALLBACK_FLOATS (1L << 22)

/* optim.cu: the gradient norm's partial sums (doubles), plus the total. */
#define WF_SUMSQ_BLOCKS 1024

/* optim.cu: the device copy of the optimizer's range table holds one
 * wf_opt_range (runtime/common/opt_backend.h; optim.cu checks the size) per
 * parameter this rank updates. */
#define WF_OPT_RANGE_BYTES 56

/* xent.cu's sum of token losses (a double, managed memory), and fp16's
 * inf / NaN flag (an int, optim.cu). */
#define WF_LOSS_ACC_BYTES 8
#define WF_NONFINITE_FLAG_BYTES 4

/* runtime/common/coll.h's wf_req (checked there), of which the runtime keeps
 * one per gradient bucket (and per ZeRO-3 gather) in an arena. */
#define WF_REQ_BYTES 24

#endif
