/* schedule.h: pipeline schedules as per-stage instruction lists.
 *
 * A pipeline has `stages` ranks and runs `micro` microbatches per step. The model
 * is cut into chunks = stages * virt pieces; chunk c lives on stage c % stages
 * (virt > 1 only for the interleaved schedule, Megatron's layout). Everything a
 * stage does in one step is one straight list of instructions: compute
 * (FWD, BWD, or BWD_INPUT + BWD_WEIGHT when the backward is split), explicit
 * point-to-point messages, collectives, and a final OPTIM.
 *
 * Messages are named by the chunk that consumes them: SEND_ACT(m, c) carries the
 * output of FWD(m, c-1) into FWD(m, c); SEND_GRAD(m, c) carries the input
 * gradient of chunk c+1 into the backward of chunk c. Sends are rendezvous: a
 * send blocks until the peer reaches the matching receive. The generator puts
 * every stage's messages in one global order that all stages agree on (so no
 * two ranks can wait on each other), and a send and a receive that meet at the
 * same point become one SENDRECV: in 1F1B's steady state, "send activation of m,
 * receive gradient of m'" paired with the neighbour's "send gradient of m',
 * receive activation of m", where both sending first would deadlock. verify.h
 * checks the result.
 *
 * Each FWD stores its saved activations in a numbered slot; BWD releases it, or
 * BWD_WEIGHT when the backward is split (W still reads the saved inputs).
 * slots[stage] is the peak number of live (microbatch, chunk) activations.
 */
#ifndef WEFT_SCHEDULE_H
#define WEFT_SCHEDULE_H

#include <stddef.h>
#include <stdio.h>

typedef enum {
    SCHED_GPIPE,       /* "gpipe": all forwards, then all backwards */
    SCHED_1F1B,        /* "1f1b": PipeDream-Flush */
    SCHED_INTERLEAVED, /* "interleaved": Megatron interleaved 1F1B, virt chunks per rank */
    SCHED_ZBH1,        /* "zb-h1": zero-bubble H1, backward split into B and W; W runs in
                          otherwise idle time, each stage keeps its 1F1B slot count */
    SCHED_2BW,         /* "pipedream-2bw": asynchronous, no flush, 1F1B order per step */
    SCHED__COUNT
} sched_kind;

typedef enum {
    SI_FWD,         /* forward of (m, chunk) */
    SI_BWD,         /* full backward: input and weight gradient */
    SI_BWD_INPUT,   /* "B": input gradient only */
    SI_BWD_WEIGHT,  /* "W": weight gradient only */
    SI_SEND_ACT, SI_RECV_ACT, SI_SEND_GRAD, SI_RECV_GRAD,
    SI_SENDRECV,    /* one send and one receive posted together (MPI_Sendrecv) */
    SI_COLLECTIVE,  /* group-wide collective; tags must come in the same order on all members */
    SI_OPTIM,       /* optimizer step, ends every stage's list */
    /* PipeDream-2BW's tied wte between stage 0 and the last stage (in `msg`):
     * a non-blocking send (never waits; the receiver takes it from its mailbox)
     * and a blocking receive. */
    SI_SEND_TIED, SI_RECV_TIED,
    /* Scatter/gather (schedule_scatter_gather): the tp-group all-gather that
     * completes a received pipeline message (m, chunk; kind in recv.kind),
     * of which each tp rank received its 1/tp slice.  A collective of the
     * stage's tp group (`group`): every member gathers the same messages in
     * the same order. */
    SI_GATHER,
    SI__COUNT
} sched_op;

typedef enum {
    MSG_ACT, MSG_GRAD,
    MSG_TIED_GRAD,   /* 2BW: the last stage's wte gradient of one batch, to stage 0 */
    MSG_TIED_WEIGHT  /* 2BW: stage 0's new wte version, to the last stage */
} sched_msg_kind;

/* One half of a SENDRECV; chunk is the consuming chunk (see above). */
typedef struct {
    sched_msg_kind kind;
    int m, chunk, peer;
} sched_msg;

#define SCHED_TAG_MAX 32

typedef struct {
    sched_op op;
    int m, chunk;           /* compute ops and plain sends/receives */
    int slot;               /* FWD, BWD, BWD_INPUT, BWD_WEIGHT; -1 otherwise */
    int dslot;              /* activation-gradient set (memory pass): BWD, BWD_INPUT,
                               BWD_WEIGHT and gradient receives; -1 otherwise */
    int peer;               /* plain sends/receives: the other rank; -1 otherwise */
    sched_msg send, recv;   /* SENDRECV; SEND_TIED uses send, RECV_TIED recv (m: the
                               first microbatch of the batch it belongs to) */
    int group;              /* COLLECTIVE: group id (members: see verify.h) */
    char tag[SCHED_TAG_MAX];/* COLLECTIVE: sequence tag, e.g. "allreduce.b3" */
} sched_instr;

typedef struct {
    sched_kind kind;
    int stages, micro, virt;
    int chunks;             /* stages * virt */
    int split_backward;     /* 1: BWD_INPUT/BWD_WEIGHT instead of BWD (zb-h1) */
    /* PipeDream-2BW: 1. There is no flush between steps: the forward and backward
     * of step t run on the weights of step t-1's update (one step of delay) while
     * OPTIM writes the next version; the runtime keeps the two versions (double
     * buffered weights). 0 for the synchronous schedules. */
    int weight_delay;
    /* PipeDream-2BW without flush (schedule_2bw.c): ins[] is the steady step, which
     * finishes one batch and starts the next. Microbatches are named in a frame
     * where the batch being finished is 1: m in [micro, 2 micro) is that batch,
     * [2 micro, 3 micro) the next one. pro[] fills the pipeline (the first
     * forwards of batch 1); epi[] is the last step before a checkpoint or the end:
     * it finishes batch 1 and starts nothing. pro + ins + ins + ... + epi is 1F1B
     * over consecutive batches; schedule_verify checks pro + ins + ins + epi. */
    sched_instr **pro, **epi;
    int *npro, *nepi;
    int tied;               /* 2BW: wte tied between stage 0 and the last stage */
    sched_instr **ins;      /* ins[stage][0 .. n[stage]-1] */
    int *n;
    int *slots;             /* activation slots reserved per stage */
    /* Scatter/gather: tp ranks a pipeline message is split across (each tp
     * rank sends its 1/split slice to its own peer, GATHER puts the message
     * together); 1: whole messages.  The lists name stages and are the same
     * for a stage's tp ranks; schedule_verify runs stages x split ranks. */
    int split;
    int *bufs;              /* per stage, the most messages held at once outside the
                               slots: produced and not yet sent (a send may come some
                               ops after its producer), or received and not yet used */
} schedule;

/* Builds the schedule; 0 on success, -1 with a message in err. virt must be 1
 * except for SCHED_INTERLEAVED (virt >= 2, micro % stages == 0). */
int schedule_build(schedule *s, sched_kind kind, int stages, int micro, int virt,
                   char *err, size_t errlen);
void schedule_free(schedule *s);
/* max(slots[]) of the schedule schedule_build would make, from the compute
 * orders alone (no messages placed, nothing verified): for searches that
 * only need the activation count.  -1 for a shape schedule_build refuses,
 * and for SCHED_2BW (its slots come after the three-batch split). */
int schedule_peak_slots(sched_kind kind, int stages, int micro, int virt);
/* slots[stage] of that schedule, likewise (weft plan's bound on a VLM's
 * first stage, which alone holds the encoder). */
int schedule_stage_slots(sched_kind kind, int stages, int micro, int virt, int stage);
/* every stage's slots[stage] of that schedule in one pass (weft plan's
 * memory bound on deep pipelines), and grad_sets[stage] (if not NULL): the
 * most input-gradient halves of a split backward waiting for their weight
 * half, a lower bound on the activation-gradient sets the memory pass gives
 * the stage (at least 1); 0, or -1 as schedule_peak_slots. */
int schedule_each_stage_slots(sched_kind kind, int stages, int micro, int virt, int *slots, int *grad_sets);

/* schedule_2bw.c. Turns a 1F1B schedule built over 3 * micro microbatches into
 * the 2BW prologue, steady step and epilogue (fields above); with tied, adds the
 * wte messages. Called by schedule_build for SCHED_2BW; 0 or -1 with err. */
int schedule_split_2bw(schedule *s, int micro, char *err, size_t errlen);
/* Adds the tied wte exchange to a built 2BW schedule with stages > 1 (the
 * model ties its embedding and LM head): the last stage sends each batch's wte
 * gradient to stage 0 after its OPTIM; stage 0 receives it before its OPTIM and
 * sends the new version V(b+2) after it, which the last stage receives at the
 * end of its next step, before its first forward of batch b+2. 0 or -1. */
int schedule_tie_2bw(schedule *s, char *err, size_t errlen);
/* The concatenation pro + ins + ins + epi of a 2BW schedule, microbatches
 * renumbered to consecutive batches 0, 1, 2 (a plain schedule, micro = 3 micro,
 * no pro/epi); 0 or -1 (out of memory). Used by the verifier and the timeline. */
int schedule_unroll_2bw(const schedule *s, schedule *out);

/* Megatron's scatter/gather over tp ranks: after every receive of a pipeline
 * message (RECV_ACT, RECV_GRAD, SENDRECV) a GATHER of it over the stage's tp
 * group (group id = the stage), in every list (2BW: prologue, step, epilogue);
 * sets split = tp.  0, or -1 with err (out of memory, or tp < 2). */
int schedule_scatter_gather(schedule *s, int tp, char *err, size_t errlen);

const char *sched_name(sched_kind kind);               /* "1f1b", ... */
int sched_parse(const char *name, sched_kind *out);    /* 0 ok, -1 unknown; "2bw" also accepted */
const char *sched_op_name(sched_op op);                /* "FWD", "RECV_GRAD", ... */
int sched_chunk_stage(const schedule *s, int chunk);   /* chunk % stages */

/* "FWD m3 c1 slot 0", "SENDRECV(send ACT m2 c1 to rank 2, recv GRAD m0 c0 from rank 2)" */
void sched_instr_str(const sched_instr *in, char *buf, size_t len);
/* All lists, one instruction a line, for --dump and debugging. */
void schedule_dump(const schedule *s, FILE *out);

/* timeline.c. The schedule is verified, then simulated with unit costs:
 * FWD 1, BWD 2, BWD_INPUT 1, BWD_WEIGHT 1; messages, collectives and OPTIM are
 * free. An instruction starts when the previous one on its stage has finished and
 * its inputs exist: a receive waits until its matching send has been issued (in
 * the simulation a send does not wait for its receiver).
 * The timeline has one row per stage and one column per time unit; a cell is
 * "F3", "B3" (both units of a full backward), "W3" (weight gradient; "B3" is then
 * the input gradient) or "." for idle. With virt > 1 a letter names the rank's
 * local chunk: "F3a" is microbatch 3 on the rank's first chunk (chunk = stage),
 * "F3b" on its second (chunk = stage + stages), and so on. Costs are per
 * instruction, so an interleaved time unit is a chunk's forward (1/virt of a
 * stage's): bubble fractions compare across kinds, makespans do not.
 * With these costs the simulation gives exactly: gpipe, 1f1b, pipedream-2bw
 * (p-1)/(m+p-1); interleaved (p-1)/(v*m+p-1); zb-h1 (2p-2)/(3m+2p-2), the
 * optimum when every stage keeps its 1F1B activation count (p = 1: 0). */
void schedule_timeline(const schedule *s, FILE *out);
/* Idle time / (stages * makespan) of the same simulation; -1 if it does not verify.
 * PipeDream-2BW: the timeline shows the unrolled pro + ins + ins + epi, and the
 * bubble is the steady state's: idle time over the period of the second steady
 * step (from its start to the epilogue's), summed over stages (0 with unit
 * costs: no flush). */
double schedule_bubble(const schedule *s);
/* Makespan of the same simulation in time units; -1 if it does not verify. */
long schedule_makespan(const schedule *s);

#endif
