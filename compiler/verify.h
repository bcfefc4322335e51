/* verify.h: static verifier for per-rank instruction lists (schedule.h).
 *
 * verify_run executes all ranks' lists together, each rank blocking at its
 * current instruction until it can complete:
 *   - compute ops (FWD, BWD, BWD_INPUT, BWD_WEIGHT) and OPTIM complete at once;
 *   - a plain send or receive is rendezvous: it completes when the peer's current
 *     instruction has the opposite part pointing back at it with the same kind,
 *     microbatch and chunk;
 *   - a SENDRECV posts both parts together and completes once both have matched
 *     (each part may match a different partner instruction);
 *   - a SEND_TIED (PipeDream-2BW's tied wte, non-blocking) completes at once and
 *     puts its message in the receiver's mailbox; a RECV_TIED completes when the
 *     oldest message of its kind from its peer is there, and must name it (MPI
 *     matches in posting order); a message never received is an error;
 *   - a COLLECTIVE completes when every member of its group is at a COLLECTIVE of
 *     that group with the same tag; a member at a different tag of the same group
 *     is an ordering violation.  A GATHER (scatter/gather's all-gather of a
 *     received pipeline message) is a collective too: every member must be at
 *     the GATHER of the same message (kind, microbatch, chunk); it needs the
 *     rank's slice received, and only it makes the message usable.
 * Matching is deterministic (no wildcards), so one run to a fixed point decides
 * the outcome for every interleaving.
 *
 * It proves, or returns -1 naming the ranks, the instruction indices ("#7", the
 * position in the rank's list, from 0) and kinds:
 *   - every send meets its receive: a rank left waiting on a finished peer, or two
 *     ranks waiting on each other with different messages (a mismatch), fails;
 *   - every group enters its collectives in the same order;
 *   - BWD / BWD_INPUT follow their FWD on the rank, BWD_WEIGHT its BWD_INPUT, and
 *     nothing runs twice;
 *   - no wait cycle: when no rank can move and not all are done, the cycle is
 *     reported ("rank 1 waits at #7 RECV_GRAD m2 c0 from rank 2; rank 2 waits at
 *     ...");
 *   - activation slots: a FWD takes a slot in 0..slots-1 that is free (never one
 *     still live), the backward names the slot its FWD took, at most `slots`
 *     are live, and none is live when the rank finishes;
 *   - with chunks > 0, data dependencies: FWD(m, c > 0) has received its
 *     activation (or ran FWD(m, c-1) itself), a backward of c < chunks-1 has
 *     received its gradient (or ran the backward of c+1 itself), and a send
 *     follows the compute that produces it.
 */
#ifndef WEFT_VERIFY_H
#define WEFT_VERIFY_H

#include <stddef.h>

#include "schedule.h"

typedef struct {
    int rank;                 /* the id peers and group members refer to */
    const sched_instr *ins;
    int n;
    int slots;                /* activation slots reserved on this rank */
} verify_rank;

/* Collective groups: a COLLECTIVE's `group` field names one of these by id. */
typedef struct {
    int id;
    const int *members;       /* rank ids */
    int nmembers;
} verify_group;

typedef struct {
    const verify_rank *ranks;
    int nranks;
    const verify_group *groups;
    int ngroups;
    int chunks;               /* model chunks, for the data-dependency checks; 0 skips them */
    /* scatter/gather: a received pipeline message is one slice of it, ready
     * for its FWD or backward only after the GATHER of it; 0: whole messages
     * (a GATHER is then an error) */
    int split;
} verify_input;

/* 0 if every rank runs to its end without violations; -1 and a message in err. */
int verify_run(const verify_input *in, char *err, size_t errlen);

/* A built pipeline schedule, rank == stage, no collective groups; for
 * PipeDream-2BW the unrolled prologue + steady + steady + epilogue.  With
 * scatter/gather (s->split > 1) on stages x split ranks (verify_tp_build).
 * A schedule equal byte for byte to one that passed before in this process
 * passes without running again (the search prices many alike). */
int schedule_verify(const schedule *s, char *err, size_t errlen);

/* A scatter/gather schedule as the ranks run it: stages x split ranks, rank
 * id stage * split + j (tp rank j of the stage) sending its slices to rank
 * peer * split + j; group id `stage` is the stage's split tp ranks, whose
 * GATHERs must agree.  Each rank owns a copy of its list (lists[rank id]),
 * so that a test can plant a fault in one.  2BW: build from the unrolled
 * schedule.  0, or -1 out of memory. */
typedef struct {
    verify_input in;
    verify_rank *ranks;
    verify_group *groups;
    int *members;
    sched_instr **lists;
    int nlists;
} verify_tp;
int verify_tp_build(const schedule *s, verify_tp *out);
void verify_tp_free(verify_tp *v);

#endif
