/* startup_peak.h: the host memory one rank takes at start-up for the
 * parameters' values (initialisation or a checkpoint's load), the one
 * formula `weft check` states (compiler/report_startup.c) and the runtime
 * compares with what its start-up allocated (runtime/common/startup_mem.c).
 * Arenas (parameters, shards, masters, moments) are not in it: only host
 * buffers of tensor data that exist during start-up.
 *
 * Initialisation is counter-based (init.c), so values are made where they
 * live.  A load reads one whole tensor at a time (W floats, the stage's
 * largest) and keeps this rank's part of it: the whole-layout parameters
 * transposed through a copy (T, the largest transposed tensor), or a
 * rank's own range (O, the largest one parameter has on a rank: all of its
 * tp shard without ZeRO, at most its bucket's shard with it).
 *
 * ZeRO-3 makes or reads each parameter's own range into an O-float buffer
 * and places it in the shard(s) and the fp32 master (zero_startup.c): no
 * stage-sized buffer.  Its resume, and every resume's moments, read the
 * file's elements the range touches a piece at a time (ckpt.c), through a
 * buffer of wf_startup_piece floats: never a whole tensor.  Otherwise 16-bit parameters (param16.c) are made or
 * loaded as floats first (P floats), in an idle arena where one is large
 * enough (wf_startup_idle_arena, the runtime's own choice), else in host
 * memory (held: P floats); a 2BW checkpoint's older version is loaded into
 * host memory as well (P more). */
#ifndef WEFT_STARTUP_PEAK_H
#define WEFT_STARTUP_PEAK_H

/* the most floats of parameter q one rank owns: numel (this rank's tp
 * shard), frozen (no optimizer state), and under ZeRO its bucket's shard
 * of bucket_numel (equal shards: compiler/buckets.c pads every bucket so
 * that dp divides it; the round-up is then a no-op) */
static inline double wf_startup_own(double numel, int frozen, int zero, double bucket_numel, int dp) {
    if (frozen) return 0;
    if (!zero) return numel;
    long b = (long)bucket_numel;
    double shard = (double)(b / dp + (b % dp != 0));
    return shard < numel ? shard : numel;
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

/* bytes, on one rank; resume: a checkpoint is loaded */
static inline double wf_startup_peak(int zero3, int resume, double whole_max, double own_max,
                                     double transposed_max, double held) {
    if (zero3) return 4.0 * (own_max + (resume ? wf_startup_piece(own_max, whole_max) : 0));
    double b = 4.0 * held;
    if (resume) b += 4.0 * (whole_max + (transposed_max > own_max ? transposed_max : own_max));
    return b;
}

#endif
