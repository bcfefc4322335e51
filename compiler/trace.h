/* trace.h: timed pipeline schedules as event traces, pictures and comparisons.
 *
 * A trace is a flat list of timed events, one per compute instruction or message,
 * each on a rank (a Chrome "pid") and a stream (a Chrome "tid"): stream 0 is the
 * rank's compute stream, stream 1 its communication stream.
 *
 * Event names and categories (the same in predicted and measured traces, so
 * that `weft trace compare` can match them by (rank, name, m, chunk)):
 *   FWD         "F3"           "forward"
 *   BWD         "B3"           "backward"   (full backward)
 *   BWD_INPUT   "B3"           "backward"   (input gradient of a split backward)
 *   BWD_WEIGHT  "W3"           "weight"
 *   send        "send act m3"  "comm"       (on the sender; also the send half
 *               "send grad m3"               of a SENDRECV; chunk = consuming chunk)
 *   COLLECTIVE  "allreduce b2" "comm"       (its tag with the first '.' as ' ')
 *   OPTIM       "optim"        "optimizer"  (m = chunk = -1)
 *   gaps        any            "idle"       (only in traces read from elsewhere)
 *
 * Usage: trace t = {0}; trace_from_schedule(&t, s, ...); trace_write_svg(&t, ...);
 * trace_free(&t).
 */
#ifndef WEFT_TRACE_H
#define WEFT_TRACE_H

#include <stddef.h>
#include <stdio.h>

#include "schedule.h"

typedef struct {
    int rank;
    int stream;        /* 0 compute, 1 communication */
    const char *name;  /* "F3", "B3", "W3", "send act m3", "allreduce b2" (owned by the trace) */
    const char *cat;   /* "forward", "backward", "weight", "comm", "optimizer", "idle" (owned) */
    int m;             /* microbatch, -1 if none */
    int chunk;         /* model chunk, -1 if none */
    double start_us, end_us;
} trace_event;

typedef struct {
    trace_event *ev;
    int n, cap;
    int ranks;         /* 1 + the largest rank seen (at least the schedule's stages) */
} trace;

/* Appends an event, copying name and cat; 0, or -1 when out of memory. */
int trace_add(trace *t, int rank, int stream, const char *name, const char *cat, int m, int chunk,
              double start_us, double end_us);
/* Frees the events and their strings and leaves an empty trace. */
void trace_free(trace *t);
/* Latest end over all events (0 if none). */
double trace_makespan(const trace *t);

/* Simulates the schedule with the given costs and appends its events (t may be
 * empty or not). The rules are timeline.c's: an instruction starts when the one
 * before it on its stage has finished and, for a receive, when its message has
 * arrived. FWD costs f_us, BWD b_us; a split backward costs b_us in all, its
 * BWD_WEIGHT w_us and its BWD_INPUT the rest, b_us - w_us (not below 0). A send
 * (or the send half of a SENDRECV, or a collective) does not hold up the compute
 * stream: it takes comm_us on the sender's communication stream, starting when
 * the sender reaches it and the stream is free, and its receive completes at
 * send start + comm_us. OPTIM takes no time. With f=1, b=2, w=1, comm=0 the
 * makespan is schedule_makespan's. Returns 0, or -1 if the schedule does not
 * verify or memory runs out. */
int trace_from_schedule(trace *t, const schedule *s, double f_us, double b_us, double w_us,
                        double comm_us);

/* The same with a cost per chunk (arrays of s->chunks) and, when optim_us is
 * not NULL, the optimizer's time per stage. */
typedef struct {
    const double *f_us, *b_us, *w_us;
    double comm_us;
    const double *optim_us;
} trace_costs;
int trace_from_costs(trace *t, const schedule *s, const trace_costs *costs);

/* Chrome trace-event JSON (object form, opens in Perfetto and chrome://tracing):
 * one complete event ("ph":"X") per event with ts/dur in microseconds, pid =
 * rank, tid = stream, args {"m", "chunk"}; metadata names each process "rank R"
 * (labelled "stage S") and its threads "compute" / "communication"; meta_name,
 * if not NULL, is stored as otherData.name. 0, or -1 on a write error. */
int trace_write_chrome(const trace *t, const char *meta_name, FILE *out);

/* SVG timeline: per rank a compute lane with a thin communication lane under it,
 * boxes coloured by category on a light grey (idle) background, microbatch
 * numbers on boxes wide enough for them, a time axis, a legend and the title.
 * The scale gives the shortest compute event at least 14 px. 0, or -1 on a
 * write error. */
int trace_write_svg(const trace *t, const char *title, FILE *out);

/* Reads the complete ("X") events of a Chrome trace in object or array form, as
 * written by trace_write_chrome or a generated program, appending them to t;
 * other phases are skipped. 0, or -1 with a message in err. */
int trace_read_chrome(trace *t, const char *path, char *err, size_t errlen);

/* Matches the events of the two traces by (rank, name, m, chunk), the k-th
 * occurrence of a key in one with the k-th in the other, and prints per
 * category (forward, backward, weight, comm, optimizer) the matched count and
 * the median and mean relative error of the durations, (measured - predicted) /
 * predicted (pairs with a zero predicted duration are left out), then per rank
 * the span (first start to last end) of both and its relative error, and the
 * counts of unmatched events. Returns 0 (-1 only when out of memory). */
int trace_compare(const trace *predicted, const trace *measured, FILE *out);

#endif
