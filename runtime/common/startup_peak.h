/* startup_peak.h: the host memory one rank takes at start-up for the
 * parameters' values (initialisation or a checkpoint's load), the one
 * formula `weft check` states (compiler/report_startup.c) and the runtime
 * compares with what its start-up allocated (runtime/common/startup_mem.c).
 * Arenas (parameters, shards, masters, moments) are not in it: only host
 * buffers of tensor data that exist during start-up.
 *
 * Initialisation is counter-based (init.c), so values are made where they
 * live.  A resume reads the parameters one whole tensor at a time (W
 * floats, the stage's largest) and keeps this rank's part of it, the
 * whole-layout ones transposed through a copy (T, the largest transposed
 * tensor); it reads the moments into a rank's own range (O, the most one
 * parameter has on this rank: all of its tp shard without ZeRO, its part
 * of its bucket's shard with it) a piece at a time (ckpt.c), through a
 * buffer of wf_startup_piece floats.  The two phases follow each other:
 * the larger of W + T and piece + O, never their sum.
 *
 * ZeRO-3 makes or reads each parameter's own range into an O-float buffer
 * and places it in the shard(s) and the fp32 master (zero_startup.c): no
 * stage-sized buffer; its resume reads the parameters a piece at a time
 * too.  Otherwise 16-bit parameters (param16.c) are made or
 * loaded as floats first (P floats), in an idle arena where one is large
 * enough (wf_startup_idle_arena, the runtime's own choice), else in host
 * memory (held: P floats); a 2BW checkpoint's older version is loaded into
 * host memory as well (P more).  Every buffer here is one the runtime
 * allocates (wf_startup_alloc), at the size stated: the bound is exact
 * (WEFT_CKPT_PIECE, a test's smaller piece, only lowers the peak). */
#ifndef WEFT_STARTUP_PEAK_H
#define WEFT_STARTUP_PEAK_H

/* the floats of parameter q dp rank r owns (its optimizer state, the own
 * range a resume reads its moments into): none if frozen, all of numel
 * (this rank's tp shard) without ZeRO, and under ZeRO the part of q
 * (at offset in the stage's arena) inside rank r's shard of its bucket
 * (bucket_offset, bucket_numel): dp equal contiguous shards, since
 * compiler/buckets.c pads every bucket so that dp divides it (the runtime's
 * wf_zero_own_range, the compiler's emitted SHARDS) */
static inline double wf_startup_own(double offset, double numel, int frozen, int zero, double bucket_offset,
                                    double bucket_numel, int dp, int r) {
    if (frozen) return 0;
    if (!zero) return numel;
    long shard = (long)bucket_numel / dp;
    double lo = bucket_offset + (double)(r * shard), hi = lo + (double)shard;
    if (offset > lo) lo = offset;
    if (offset + numel < hi) hi = offset + numel;
    return hi > lo ? hi - lo : 0;
}

/* The idle arena 16-bit parameters (not ZeRO-3) are made or loaded in as
 * floats, the first of these at least param floats large: the gradient
 * arena, idle until the first backward (floats, and whole: not under
 * grad16 or ZeRO-2); a fresh start's AdamW first moment, zero until the
 * first step (a resume loads it; device memory: not offloaded); the
 * activation arena (slots and region).  WF_IDLE_NONE: host memory.  Sizes
 * in floats, as the program states them; runtime/common/param16.c borrows
 * the arena named, compiler/report_startup.c counts what it leaves. */
enum { WF_IDLE_NONE, WF_IDLE_GRADS, WF_IDLE_MOMENT, WF_IDLE_ACTS };
static inline int wf_startup_idle_arena(int zero, int grad16, int resume, int offload_optimizer, double param,
                                        double grads, double moment, double acts) {
    if (zero < 2 && !grad16 && grads >= param) return WF_IDLE_GRADS;
    if (!resume && !offload_optimizer && moment >= param) return WF_IDLE_MOMENT;
    if (acts >= param) return WF_IDLE_ACTS;
    return WF_IDLE_NONE;
}

/* floats held in host memory through start-up (16-bit parameters, not
 * ZeRO-3): the parameters as floats where no idle arena holds them (idle:
 * wf_startup_idle_arena's answer), and a 2BW checkpoint's older version */
static inline double wf_startup_held(int zero3, int param16, int two_versions, int idle, double param_numel) {
    if (zero3 || !param16) return 0;
    return param_numel * ((idle == WF_IDLE_NONE ? 1 : 0) + (two_versions ? 1 : 0));
}

/* the read piece, floats: 64 MiB, or less where the largest own range or
 * tensor is smaller (at least one float) */
#define WF_STARTUP_PIECE_MOST (1L << 24)
static inline double wf_startup_piece(double own_max, double whole_max) {
    double n = WF_STARTUP_PIECE_MOST;
    if (own_max < n) n = own_max;
    if (whole_max < n) n = whole_max;
    return n < 1 ? 1 : n;
}

/* bytes, on one rank; resume: a checkpoint is loaded.  own_max: the most
 * floats of one parameter this rank owns, at least 1 (the runtime's own
 * range buffer, wf_own_most).  The buffers, one phase at a time:
 *   ZeRO-3: the own range (zero_startup.c); resuming, a piece beside it
 *     (ckpt.c read_all, parameters and moments alike).
 *   otherwise: held throughout; resuming, the parameters through one whole
 *     tensor (whole_max) and a transposed one's copy beside it
 *     (transposed_max), then the moments through a piece and the own range
 *     (ckpt.c read_all): the larger pair. */
static inline double wf_startup_peak(int zero3, int resume, double whole_max, double own_max,
                                     double transposed_max, double held) {
    double piece = wf_startup_piece(own_max, whole_max);
    if (zero3) return 4.0 * (own_max + (resume ? piece : 0));
    double b = 4.0 * held;
    if (resume) {
        double params = whole_max + transposed_max, moments = piece + own_max;
        b += 4.0 * (params > moments ? params : moments);
    }
    return b;
}

#endif
