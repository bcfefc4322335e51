/* ckpt_peak.h: the host memory a checkpoint save takes on one rank, the one
 * formula `weft check` states (compiler/report_ckpt.c) and the runtime
 * compares with what the save allocated (runtime/common/ckpt.c).
 *
 * The save goes tensor by tensor, in file order.  For each, every rank copies
 * its piece (its ZeRO shard of it, or all of its tp shard) to host memory;
 * dp rank 0 of each tp group gathers the pieces into the tp shard; the
 * stage's writer (dp 0, tp 0) receives the tp shards one at a time and puts
 * each in its places of the whole tensor, transposed where the file wants
 * it, in a buffer it writes from.  So a rank holds at most: one piece (<= the
 * largest tp shard, L floats), on dp 0 one tp shard (L), on the writer one
 * received shard (L, tp > 1) and one whole tensor (W floats).  Under
 * --async-save every rank first copies its own pieces (wf_ckpt_async_peak),
 * or, where MPI lets no thread call it, the writer holds the whole stage
 * until written (held bytes) in place of that one tensor.  With pp > 1 each
 * stage's writer writes its own shard of a Hugging Face sharded checkpoint
 * and world rank 0 only indexes them (ckpt_shards.h): nothing more. */
#ifndef WEFT_CKPT_PEAK_H
#define WEFT_CKPT_PEAK_H

/* bytes; held 0 for a synchronous save */
static inline double wf_ckpt_save_peak(double whole_max, double local_max, int tp, int dp_rank, int tp_rank,
                                       double held) {
    double b = 4.0 * local_max;  /* this rank's piece */
    if (dp_rank == 0) b += 4.0 * local_max;  /* its tp shard, gathered over dp */
    if (dp_rank == 0 && tp_rank == 0) {
        if (tp > 1) b += 4.0 * local_max;  /* another tp rank's shard, received */
        b += held > 0 ? held : 4.0 * whole_max;
    }
    return b;
}

/* --async-save with threads (the usual case): every rank holds a host copy
 * of its own pieces (own bytes) while its thread runs the synchronous save's
 * streaming on them */
static inline double wf_ckpt_async_peak(double whole_max, double local_max, int tp, int dp_rank, int tp_rank,
                                        double own) {
    return own + wf_ckpt_save_peak(whole_max, local_max, tp, dp_rank, tp_rank, 0);
}

/* --async-save where MPI lets no thread call it: the stage's writer holds
 * the weights, AdamW m and v (and 2BW's older weights) of every tensor of
 * its stage whole, tied copies too (stage_floats), until its thread has
 * written them: the held bytes wf_ckpt_save_peak takes for the writer */
static inline double wf_ckpt_whole_stage_held(double stage_floats, int delayed) {
    return 4.0 * stage_floats * (3 + (delayed ? 1 : 0));
}

#endif
