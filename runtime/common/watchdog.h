/* watchdog.h: every rank's watchdog (watchdog.c).  A thread watches the
 * one wait the rank may be in (a collective, a receive, a barrier): one that
 * lasts longer than fault.timeout_s means a peer is dead, stopped or hung,
 * and the rank ends the whole job, naming itself, the schedule instruction
 * and the peer or group it waited on.  Without it a SIGSTOPped rank leaves
 * its peers spinning in MPI_Wait for ever.
 *
 * The wait itself is marked by WF_MPI (every MPI call) and by the backends'
 * host waits; what it belongs to by the callers:
 *   wf_watch_what(c, group, fmt, ...)  the next waits are for this
 *                                      (group: a wf_group, or -1: a peer
 *                                      named in the text); until
 *   wf_watch_done()                    which clears it;
 *   wf_instr_begin/end                 the schedule instruction running
 *                                      (WF_TRACED in rt.h), as context. */
#ifndef WEFT_WATCHDOG_H
#define WEFT_WATCHDOG_H

typedef struct wf_ctx wf_ctx;

/* After the groups exist; timeout_s > 0. */
void wf_watch_start(const wf_ctx *c, double timeout_s);
double wf_watch_timeout(void);  /* 0 before wf_watch_start */

void wf_watch_what(const wf_ctx *c, int group, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void wf_watch_done(void);
/* the collectives (coll_mpi.c): the group their waits are on, when the
 * caller named none; -1 when the call is over */
void wf_watch_group(int group);

/* call: the waiting call's text (its name is what is shown), where: file:line */
void wf_watch_enter(const char *call, const char *where);
void wf_watch_leave(void);

void wf_instr_end(void);  /* wf_instr_begin is in weft/rt.h */

/* The message of a pipeline tag (emit_step.c's msg_tag): "act m=2 chunk=1". */
void wf_watch_tag_text(const wf_ctx *c, int tag, char *out, int n);

#endif
