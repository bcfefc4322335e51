/* trace.c: timed schedules as event traces, Chrome JSON, SVG pictures, and
 * predicted-versus-measured comparison (conventions in trace.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "trace.h"
#include "verify.h"

/* ---------------------------------------------------------------- events */

static char *copy_str(const char *s)
{
    size_t len = strlen(s ? s : "");
    char *c = malloc(len + 1);
    if (c) memcpy(c, s ? s : "", len + 1);
    return c;
}

int trace_add(trace *t, int rank, int stream, const char *name, const char *cat, int m, int chunk,
              double start_us, double end_us)
{
    if (t->n == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        trace_event *ev = realloc(t->ev, sizeof *ev * (size_t)cap);
        if (!ev) return -1;
        t->ev = ev;
        t->cap = cap;
    }
    char *n = copy_str(name), *c = copy_str(cat);
    if (!n || !c) {
        free(n);
        free(c);
        return -1;
    }
    t->ev[t->n++] = (trace_event){rank, stream, n, c, m, chunk, start_us, end_us};
    if (rank + 1 > t->ranks) t->ranks = rank + 1;
    return 0;
}

void trace_free(trace *t)
{
    for (int i = 0; i < t->n; i++) {
        free((char *)t->ev[i].name);
        free((char *)t->ev[i].cat);
    }
    free(t->ev);
    *t = (trace){0};
}

double trace_makespan(const trace *t)
{
    double end = 0;
    for (int i = 0; i < t->n; i++)
        if (t->ev[i].end_us > end) end = t->ev[i].end_us;
    return end;
}

/* ------------------------------------------------------------ simulation */

typedef struct {
    const schedule *s;
    trace *t;
    const trace_costs *costs;
    double comm_us;
    double *arrive;    /* per message: when its receive can complete; < 0 not sent yet */
    double *comm_free; /* per stage: when the communication stream is free */
} sim;

static long msg_index(const schedule *s, sched_msg_kind kind, int m, int chunk)
{
    return ((long)kind * s->micro + m) * s->chunks + chunk;
}

/* Occupies the communication stream of stage st from `at` (or later, when it is
 * free) for comm_us and records the event; returns the start, or -1. */
static double comm_event(sim *x, int st, double at, const char *name, int m, int chunk)
{
    double start = at > x->comm_free[st] ? at : x->comm_free[st];
    x->comm_free[st] = start + x->comm_us;
    if (trace_add(x->t, st, 1, name, "comm", m, chunk, start, start + x->comm_us) != 0) return -1;
    return start;
}

static int post_send(sim *x, int st, double at, sched_msg_kind kind, int m, int chunk)
{
    char name[48];
    snprintf(name, sizeof name, "send %s m%d", kind == MSG_ACT ? "act" : "grad", m);
    double start = comm_event(x, st, at, name, m, chunk);
    if (start < 0) return -1;
    x->arrive[msg_index(x->s, kind, m, chunk)] = start + x->comm_us;
    return 0;
}

static int post_collective(sim *x, int st, double at, const char *tag)
{
    char name[SCHED_TAG_MAX + 1];
    snprintf(name, sizeof name, "%s", tag);
    char *dot = strchr(name, '.');
    if (dot) *dot = ' ';
    return comm_event(x, st, at, name, -1, -1) < 0 ? -1 : 0;
}

/* Duration, name letter and category of a compute op; 0 for the others. */
static int compute_op(sched_op op, const trace_costs *c, int chunk, double *dur, char *letter,
                      const char **cat)
{
    const double cost[3] = {c->f_us[chunk], c->b_us[chunk], c->w_us[chunk]};
    switch (op) {
    case SI_FWD: *dur = cost[0], *letter = 'F', *cat = "forward"; return 1;
    case SI_BWD: *dur = cost[1], *letter = 'B', *cat = "backward"; return 1;
    case SI_BWD_INPUT:
        *dur = cost[1] > cost[2] ? cost[1] - cost[2] : 0, *letter = 'B', *cat = "backward";
        return 1;
    case SI_BWD_WEIGHT: *dur = cost[2], *letter = 'W', *cat = "weight"; return 1;
    default: return 0;
    }
}

/* Tries to run instruction in on stage st at its clock. Returns 1 if it ran,
 * 0 if it waits for a message, -1 when out of memory. */
static int step(sim *x, int st, const sched_instr *in, double *clock, int *posted)
{
    double t = *clock, dur;
    char letter, name[32];
    const char *cat;
    sched_msg_kind rk = MSG_ACT;
    int rm = -1, rc = -1;

    if (in->op == SI_SEND_ACT || in->op == SI_SEND_GRAD) {
        sched_msg_kind kind = in->op == SI_SEND_ACT ? MSG_ACT : MSG_GRAD;
        return post_send(x, st, t, kind, in->m, in->chunk) ? -1 : 1;
    }
    if (in->op == SI_COLLECTIVE) return post_collective(x, st, t, in->tag) ? -1 : 1;
    if (in->op == SI_GATHER) return 1;  /* scatter/gather: in its message's comm_us (simulate.c) */
    if (in->op == SI_SENDRECV && !*posted) {
        /* The send half goes out once, at the first attempt, even if the receive waits. */
        if (post_send(x, st, t, in->send.kind, in->send.m, in->send.chunk)) return -1;
        *posted = 1;
    }
    if (in->op == SI_RECV_ACT || in->op == SI_RECV_GRAD)
        rk = in->op == SI_RECV_ACT ? MSG_ACT : MSG_GRAD, rm = in->m, rc = in->chunk;
    else if (in->op == SI_SENDRECV)
        rk = in->recv.kind, rm = in->recv.m, rc = in->recv.chunk;
    if (rm >= 0) {
        double at = x->arrive[msg_index(x->s, rk, rm, rc)];
        if (at < 0) return 0;
        *clock = at > t ? at : t;
        return 1;
    }
    if (compute_op(in->op, x->costs, in->chunk, &dur, &letter, &cat)) {
        snprintf(name, sizeof name, "%c%d", letter, in->m);
        if (trace_add(x->t, st, 0, name, cat, in->m, in->chunk, t, t + dur)) return -1;
        *clock = t + dur;
    } else if (in->op == SI_OPTIM) {
        double d = x->costs->optim_us ? x->costs->optim_us[st] : 0;
        if (trace_add(x->t, st, 0, "optim", "optimizer", -1, -1, t, t + d)) return -1;
        *clock = t + d;
    }
    return 1;
}

int trace_from_schedule(trace *t, const schedule *s, double f_us, double b_us, double w_us,
                        double comm_us)
{
    double *each = malloc(sizeof(double) * 3 * (size_t)(s->chunks ? s->chunks : 1));
    if (!each) return -1;
    for (int k = 0; k < s->chunks; k++)
        each[k] = f_us, each[s->chunks + k] = b_us, each[2 * s->chunks + k] = w_us;
    trace_costs c = {each, each + s->chunks, each + 2 * s->chunks, comm_us, NULL};
    int rc = trace_from_costs(t, s, &c);
    free(each);
    return rc;
}

int trace_from_costs(trace *t, const schedule *s, const trace_costs *costs)
{
    char err[512];
    if (s->pro) { /* PipeDream-2BW: prologue + steady + steady + epilogue */
        schedule u;
        if (schedule_unroll_2bw(s, &u) != 0) return -1;
        int rc = trace_from_costs(t, &u, costs);
        schedule_free(&u);
        return rc;
    }
    if (schedule_verify(s, err, sizeof err) != 0) return -1;
    long nmsg = 2L * s->micro * s->chunks;
    double comm_us = costs->comm_us;
    sim x = {s, t, costs, comm_us, malloc(sizeof(double) * (size_t)(nmsg ? nmsg : 1)),
             calloc((size_t)s->stages, sizeof(double))};
    double *clock = calloc((size_t)s->stages, sizeof(double));
    int *pc = calloc((size_t)s->stages, sizeof(int));
    int *posted = calloc((size_t)s->stages, sizeof(int));
    int rc = x.arrive && x.comm_free && clock && pc && posted ? 0 : -1;
    for (long k = 0; rc == 0 && k < nmsg; k++) x.arrive[k] = -1;
    if (rc == 0 && s->stages > t->ranks) t->ranks = s->stages;
    for (int moved = 1, left = 1; rc == 0 && left;) {
        if (!moved) rc = -1; /* cannot happen for a verified schedule */
        moved = left = 0;
        for (int st = 0; rc == 0 && st < s->stages; st++) {
            while (pc[st] < s->n[st]) {
                int r = step(&x, st, &s->ins[st][pc[st]], &clock[st], &posted[st]);
                if (r < 0) rc = -1;
                if (r <= 0) break;
                pc[st]++;
                posted[st] = 0;
                moved = 1;
            }
            if (pc[st] < s->n[st]) left = 1;
        }
    }
    free(x.arrive);
    free(x.comm_free);
    free(clock);
    free(pc);
    free(posted);
    return rc;
}

/* ---------------------------------------------------------- Chrome JSON */

static void json_str(FILE *out, const char *s)
{
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", out);
        else if (*p == '\t') fputs("\\t", out);
        else if (*p < 0x20) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

static double finite_or_zero(double v)
{
    return isfinite(v) ? v : 0.0;
}

static void chrome_meta(FILE *out, int *first, const char *what, int pid, int tid, const char *key,
                        const char *value)
{
    fprintf(out, "%s\n{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"%s\":",
            *first ? "" : ",", what, pid, tid, key);
    json_str(out, value);
    fputs("}}", out);
    *first = 0;
}

int trace_write_chrome(const trace *t, const char *meta_name, FILE *out)
{
    int first = 1;
    char buf[48];
    fputs("{\"traceEvents\":[", out);
    for (int r = 0; r < t->ranks; r++) {
        snprintf(buf, sizeof buf, "rank %d", r);
        chrome_meta(out, &first, "process_name", r, 0, "name", buf);
        snprintf(buf, sizeof buf, "stage %d", r);
        chrome_meta(out, &first, "process_labels", r, 0, "labels", buf);
        fprintf(out, ",\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,"
                     "\"args\":{\"sort_index\":%d}}",
                r, r);
        chrome_meta(out, &first, "thread_name", r, 0, "name", "compute");
        chrome_meta(out, &first, "thread_name", r, 1, "name", "communication");
    }
    for (int i = 0; i < t->n; i++) {
        const trace_event *e = &t->ev[i];
        fputs(first ? "\n{\"name\":" : ",\n{\"name\":", out);
        json_str(out, e->name);
        fputs(",\"cat\":", out);
        json_str(out, e->cat);
        fprintf(out, ",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,\"tid\":%d,"
                     "\"args\":{\"m\":%d,\"chunk\":%d}}",
                finite_or_zero(e->start_us), finite_or_zero(e->end_us - e->start_us), e->rank,
                e->stream, e->m, e->chunk);
        first = 0;
    }
    fputs("\n],\"displayTimeUnit\":\"ms\"", out);
    if (meta_name) {
        fputs(",\"otherData\":{\"name\":", out);
        json_str(out, meta_name);
        fputs("}", out);
    }
    fputs("}\n", out);
    return ferror(out) ? -1 : 0;
}

/* ------------------------------------------------------------------ SVG */

static const struct {
    const char *cat, *label, *fill;
} kinds[] = {
    {"forward", "forward (F)", "#4e79a7"},
    {"backward", "backward (B)", "#e15759"},
    {"weight", "weight gradient (W)", "#59a14f"},
    {"comm", "communication", "#f28e2b"},
    {"optimizer", "optimizer", "#8e5ea2"},
    {"idle", "idle", "#e2e2e2"},
};
#define NKINDS (int)(sizeof kinds / sizeof kinds[0])
#define NCATS 5 /* the first five kinds are the compared categories */
#define IDLE 5  /* kinds[IDLE] */

static int kind_of(const char *cat)
{
    for (int k = 0; k < NKINDS; k++)
        if (cat && strcmp(cat, kinds[k].cat) == 0) return k;
    return -1;
}

/* Layout, in pixels. */
enum {
    ML = 80, MR = 30,              /* left and right margins */
    TOP = 76,                      /* first lane */
    LANE = 22, GAP = 2, COMM = 7,  /* compute lane, gap, communication lane */
    PITCH = LANE + GAP + COMM + 10 /* one rank */
};
#define MIN_BOX 14.0   /* px for the shortest compute event */
#define MIN_PLOT 900.0 /* px for the whole span at least */
#define MAX_PLOT 30000.0
#define FONT 9.0       /* box labels; a digit is about 0.56 em */

static void xml_str(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&apos;", out); break;
        default: fputc(*p < 0x20 && *p != '\t' && *p != '\n' ? '?' : *p, out);
        }
    }
}

/* Smallest 1, 2 or 5 times a power of ten that is at least x. */
static double nice_step(double x)
{
    double p = pow(10, floor(log10(x)));
    return x <= p ? p : x <= 2 * p ? 2 * p : x <= 5 * p ? 5 * p : 10 * p;
}

static void svg_event(FILE *out, const trace_event *e, double t0, double px)
{
    int k = kind_of(e->cat);
    double x = ML + (e->start_us - t0) * px, w = (e->end_us - e->start_us) * px;
    double y = TOP + e->rank * PITCH + (e->stream ? LANE + GAP : 0), h = e->stream ? COMM : LANE;
    if (!(w >= 2)) w = 2;
    fprintf(out, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"%s>",
            k >= 0 ? kinds[k].cat : "other", x, y, w, (int)h, k >= 0 ? kinds[k].fill : "#8c8c8c",
            e->stream ? "" : " stroke=\"#ffffff\" stroke-width=\"0.6\"");
    fprintf(out, "<title>rank %d: ", e->rank);
    xml_str(out, e->name);
    fputs(" (", out);
    xml_str(out, e->cat);
    fprintf(out, ") m %d chunk %d, %.3f-%.3f us</title></rect>\n", e->m, e->chunk, e->start_us,
            e->end_us);
    if (e->stream == 0 && e->m >= 0 && k != IDLE) {
        char num[16];
        int len = snprintf(num, sizeof num, "%d", e->m);
        if (w >= len * 0.56 * FONT + 3)
            fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"%g\" fill=\"#ffffff\" "
                         "text-anchor=\"middle\">%s</text>\n",
                    x + w / 2, y + LANE / 2 + FONT * 0.35, FONT, num);
    }
}

int trace_write_svg(const trace *t, const char *title, FILE *out)
{
    double t0 = t->n ? t->ev[0].start_us : 0, t1 = t0, shortest = 0;
    for (int i = 0; i < t->n; i++) {
        const trace_event *e = &t->ev[i];
        double d = e->end_us - e->start_us;
        if (e->start_us < t0) t0 = e->start_us;
        if (e->end_us > t1) t1 = e->end_us;
        if (e->stream == 0 && kind_of(e->cat) != IDLE && d > 0 && (shortest == 0 || d < shortest))
            shortest = d;
    }
    double span = t1 - t0, px = 1;
    if (span > 0) {
        px = MIN_PLOT / span;
        if (shortest > 0 && MIN_BOX / shortest > px) px = MIN_BOX / shortest;
        if (span * px > MAX_PLOT) px = MAX_PLOT / span;
    }
    double plot = span * px, width = ML + plot + MR;
    if (width < ML + 880) width = ML + 880;
    int ranks = t->ranks > 0 ? t->ranks : 1;
    double axis_y = TOP + ranks * PITCH, height = axis_y + 46;
    const char *unit = span >= 1e6 ? "s" : span >= 1e4 ? "ms" : "us";
    double unit_div = span >= 1e6 ? 1e6 : span >= 1e4 ? 1e3 : 1;

    fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                 "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                 "viewBox=\"0 0 %.0f %.0f\" font-family=\"Helvetica, Arial, sans-serif\">\n"
                 "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\"/>\n",
            width, height, width, height, width, height);
    fputs("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">", out);
    xml_str(out, title);
    fprintf(out, "</text>\n<text x=\"12\" y=\"42\" font-size=\"11\" fill=\"#555555\">"
                 "%d ranks, %d events, span %g %s</text>\n",
            t->ranks, t->n, span / unit_div, unit);

    /* Legend. */
    double lx = 12;
    for (int k = 0; k < NKINDS; k++) {
        fprintf(out, "<rect x=\"%.1f\" y=\"50\" width=\"12\" height=\"12\" fill=\"%s\"/>"
                     "<text x=\"%.1f\" y=\"60\" font-size=\"11\">%s</text>\n",
                lx, kinds[k].fill, lx + 16, kinds[k].label);
        lx += 16 + strlen(kinds[k].label) * 6.2 + 18;
    }

    /* Lanes: the grey background is idle time. */
    for (int r = 0; r < ranks; r++) {
        double y = TOP + r * PITCH;
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">rank %d</text>\n"
                     "<text x=\"%d\" y=\"%.1f\" font-size=\"7\" fill=\"#777777\" "
                     "text-anchor=\"end\">comm</text>\n"
                     "<rect x=\"%d\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"/>\n"
                     "<rect x=\"%d\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" fill=\"#f1f1f1\"/>\n",
                ML - 8, y + LANE / 2 + 4, r, ML - 8, y + LANE + GAP + COMM - 1, ML, y, plot, LANE,
                kinds[IDLE].fill, ML, y + LANE + GAP, plot, COMM);
    }

    /* Time axis with grid lines. */
    fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333333\"/>\n", ML,
            axis_y, ML + plot, axis_y);
    if (span > 0) {
        double stepv = nice_step(80 / px);
        for (long k = 0; k * stepv <= span * (1 + 1e-9); k++) {
            double x = ML + k * stepv * px;
            fprintf(out, "<line x1=\"%.2f\" y1=\"%d\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#ffffff\"/>\n"
                         "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" y2=\"%.1f\" stroke=\"#333333\"/>\n"
                         "<text x=\"%.2f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"middle\">%g</text>\n",
                    x, TOP, x, axis_y - 10, x, axis_y, x, axis_y + 5, x, axis_y + 17,
                    k * stepv / unit_div);
        }
    }
    fprintf(out, "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" fill=\"#555555\">time (%s)</text>\n",
            ML, axis_y + 36, unit);

    for (int i = 0; i < t->n; i++) svg_event(out, &t->ev[i], t0, px);
    fputs("</svg>\n", out);
    return ferror(out) ? -1 : 0;
}

/* ------------------------------------------------------- reading Chrome */

static char *read_all(const char *path, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open", path);
        return NULL;
    }
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    for (size_t got = 1; buf && got > 0;) {
        if (len + 1 == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = b;
        }
        got = fread(buf + len, 1, cap - len - 1, f);
        len += got;
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (!buf) snprintf(err, errlen, "%s: read failed", path);
    else buf[len] = '\0';
    return buf;
}

static int num_or(const cJSON *obj, const char *key, double dflt, double *out)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!cJSON_IsNumber(v)) return -1;
    *out = v->valuedouble;
    return 0;
}

static const char *str_or(const cJSON *obj, const char *key, const char *dflt)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : dflt;
}

/* One "X" event into t; 0, or -1 with a message. */
static int read_event(trace *t, const cJSON *e, int i, char *err, size_t errlen)
{
    double pid, tid, ts, dur, m = -1, chunk = -1;
    const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
    if (num_or(e, "pid", 0, &pid) || num_or(e, "tid", 0, &tid) || num_or(e, "ts", NAN, &ts) ||
        num_or(e, "dur", 0, &dur) || isnan(ts) ||
        (cJSON_IsObject(args) && (num_or(args, "m", -1, &m) || num_or(args, "chunk", -1, &chunk)))) {
        snprintf(err, errlen, "event %d: pid, tid, ts, dur, args.m and args.chunk must be numbers "
                              "(ts required)", i);
        return -1;
    }
    if (pid < 0 || pid > 1e6) {
        snprintf(err, errlen, "event %d: pid %g out of range", i, pid);
        return -1;
    }
    if (trace_add(t, (int)pid, (int)tid, str_or(e, "name", ""), str_or(e, "cat", ""), (int)m,
                  (int)chunk, ts, ts + dur)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

int trace_read_chrome(trace *t, const char *path, char *err, size_t errlen)
{
    char *text = read_all(path, err, errlen);
    if (!text) return -1;
    cJSON *root = cJSON_Parse(text);
    free(text);
    const cJSON *events = cJSON_IsArray(root) ? root
                                              : cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    int rc = 0, i = 0;
    if (!root) {
        snprintf(err, errlen, "%s: not valid JSON", path);
        rc = -1;
    } else if (!cJSON_IsArray(events)) {
        snprintf(err, errlen, "%s: no traceEvents array", path);
        rc = -1;
    }
    if (rc) events = NULL;
    const cJSON *e;
    cJSON_ArrayForEach(e, events)
    {
        const char *ph = str_or(e, "ph", "");
        double pid;
        if (strcmp(ph, "X") == 0) {
            if (read_event(t, e, i, err, errlen)) {
                rc = -1;
                break;
            }
        } else if (strcmp(ph, "M") == 0 && num_or(e, "pid", -1, &pid) == 0 && pid >= 0 &&
                   pid < 1e6 && pid + 1 > t->ranks) {
            t->ranks = (int)pid + 1; /* a named rank without events still gets a row */
        }
        i++;
    }
    cJSON_Delete(root);
    return rc;
}

/* ------------------------------------------------------------ comparing */

static int key_cmp(const trace_event *a, const trace_event *b)
{
    if (a->rank != b->rank) return a->rank < b->rank ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c) return c;
    if (a->m != b->m) return a->m < b->m ? -1 : 1;
    if (a->chunk != b->chunk) return a->chunk < b->chunk ? -1 : 1;
    return 0;
}

static int event_cmp(const void *pa, const void *pb)
{
    const trace_event *a = *(const trace_event *const *)pa, *b = *(const trace_event *const *)pb;
    int c = key_cmp(a, b);
    if (c) return c;
    return a->start_us < b->start_us ? -1 : a->start_us > b->start_us;
}

typedef struct {
    int cat;
    double err;
} rel_err;

static int err_cmp(const void *pa, const void *pb)
{
    const rel_err *a = pa, *b = pb;
    if (a->cat != b->cat) return a->cat < b->cat ? -1 : 1;
    return a->err < b->err ? -1 : a->err > b->err;
}

static const trace_event **sorted(const trace *t)
{
    const trace_event **p = malloc(sizeof *p * (size_t)(t->n ? t->n : 1));
    if (!p) return NULL;
    for (int i = 0; i < t->n; i++) p[i] = &t->ev[i];
    qsort(p, (size_t)t->n, sizeof *p, event_cmp);
    return p;
}

static int dbl_cmp(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

static double median_of(double *v, int n)
{
    if (n == 0) return NAN;
    qsort(v, (size_t)n, sizeof *v, dbl_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Span (first start to last end) of rank r's events; step >= 0 picks the
 * events of that step (steps[i] for event i), -1 takes all. */
static double span_of(const trace *t, const int *steps, int rank, int step)
{
    double lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < t->n; i++)
        if (t->ev[i].rank == rank && (step < 0 || steps[i] == step)) {
            if (t->ev[i].start_us < lo) lo = t->ev[i].start_us;
            if (t->ev[i].end_us > hi) hi = t->ev[i].end_us;
        }
    return hi >= lo ? hi - lo : NAN;
}

static void print_err(FILE *out, double pred, double meas, const char *end)
{
    if (!isnan(pred)) fprintf(out, " %13.3f us", pred);
    else fprintf(out, " %16s", "-");
    if (!isnan(meas)) fprintf(out, " %13.3f us", meas);
    else fprintf(out, " %16s", "-");
    if (!isnan(pred) && !isnan(meas) && pred > 0) fprintf(out, " %+9.2f%%%s", 100 * (meas - pred) / pred, end);
    else fprintf(out, " %10s%s", "n/a", end);
}

/* Rank r's idle share of a step (or of everything, step -1): what its
 * compute stream did not spend in forward, backward, weight or optimizer. */
static double idle_of(const trace *t, const int *steps, int rank, int step)
{
    double busy = 0, span = span_of(t, steps, rank, step);
    for (int i = 0; i < t->n; i++) {
        const trace_event *e = &t->ev[i];
        if (e->rank != rank || e->stream != 0 || (step >= 0 && steps[i] != step)) continue;
        int k = kind_of(e->cat);
        if (k >= 0 && k < NCATS && strcmp(e->cat, "comm") != 0) busy += e->end_us - e->start_us;
    }
    return span > 0 ? 1 - busy / span : NAN;
}

/* Per step (the slowest rank's span) and per rank (the median span over the
 * compared steps), predicted (one step) against measured. */
static void print_spans(const trace *p, const trace *m, const int *steps, int n_steps, int first,
                        FILE *out)
{
    int ranks = p->ranks > m->ranks ? p->ranks : m->ranks;
    double pred = 0, *v = malloc(sizeof(double) * (size_t)(n_steps + 1));
    if (!v) return;
    for (int r = 0; r < ranks; r++) {
        double sp = span_of(p, NULL, r, -1);
        if (!isnan(sp) && sp > pred) pred = sp;
    }
    fprintf(out, "%-6s %16s %16s %10s\n", "step", "predicted", "measured", "error");
    for (int st = 0; st < n_steps; st++) {
        double worst = NAN;
        for (int r = 0; r < ranks; r++) {
            double sp = span_of(m, steps, r, st);
            if (!isnan(sp) && (isnan(worst) || sp > worst)) worst = sp;
        }
        fprintf(out, "step %-2d%s", st, st < first ? "*" : " ");
        print_err(out, pred, worst, "\n");
    }
    fprintf(out, "%-6s %16s %16s %10s   %s\n", "rank", "predicted span", "measured span", "error",
            "idle predicted / measured");
    for (int r = 0; r < ranks; r++) {
        int n = 0, ni = 0;
        for (int st = first; st < n_steps; st++) {
            double sp = span_of(m, steps, r, st);
            if (!isnan(sp)) v[n++] = sp;
        }
        fprintf(out, "%-6d", r);
        double sp = span_of(p, NULL, r, -1);
        print_err(out, sp, median_of(v, n), "");
        for (int st = first; st < n_steps; st++) {
            double f = idle_of(m, steps, r, st);
            if (!isnan(f)) v[ni++] = f;
        }
        double pi = idle_of(p, NULL, r, -1), mi = median_of(v, ni);
        if (!isnan(pi)) fprintf(out, "   %5.1f%%", 100 * pi);
        else fprintf(out, "   %6s", "-");
        if (!isnan(mi)) fprintf(out, " / %5.1f%%\n", 100 * mi);
        else fprintf(out, " / %6s\n", "-");
    }
    free(v);
}

int trace_compare(const trace *predicted, const trace *measured, FILE *out)
{
    const trace_event **p = sorted(predicted), **m = sorted(measured);
    rel_err *errs = malloc(sizeof *errs * (size_t)(measured->n ? measured->n : 1));
    int *steps = malloc(sizeof(int) * (size_t)(measured->n ? measured->n : 1));
    int matched[NCATS] = {0}, nerr = 0, pairs = 0, only_p = 0, only_m = 0, n_steps = 1;
    if (!p || !m || !errs || !steps) {
        free(p), free(m), free(errs), free(steps);
        return -1;
    }
    /* A key (rank, name, m, chunk) occurs np times in the predicted step and
     * once per step as often in the measured run: its j-th measured occurrence
     * belongs to step j / np and pairs with predicted occurrence j % np. */
    for (int i = 0; i < measured->n; i++) steps[i] = -1;
    for (int i = 0, j = 0; i < predicted->n || j < measured->n;) {
        int c = i == predicted->n ? 1 : j == measured->n ? -1 : key_cmp(p[i], m[j]);
        if (c != 0) {
            if (c < 0) only_p++, i++;
            else only_m++, j++;
            continue;
        }
        int np = 0, nm = 0;
        while (i + np < predicted->n && key_cmp(p[i], p[i + np]) == 0) np++;
        while (j + nm < measured->n && key_cmp(m[j], m[j + nm]) == 0) nm++;
        for (int k = 0; k < nm; k++) {
            steps[m[j + k] - measured->ev] = k / np;
            if (k / np + 1 > n_steps) n_steps = k / np + 1;
        }
        i += np, j += nm;
    }
    int first = n_steps > 1 ? 1 : 0; /* step 0 warms up: left out when there are more */
    for (int i = 0, j = 0; i < predicted->n && j < measured->n;) {
        int c = key_cmp(p[i], m[j]);
        if (c != 0) {
            if (c < 0) i++;
            else j++;
            continue;
        }
        int np = 0, nm = 0;
        while (i + np < predicted->n && key_cmp(p[i], p[i + np]) == 0) np++;
        while (j + nm < measured->n && key_cmp(m[j], m[j + nm]) == 0) nm++;
        for (int k = 0; k < nm; k++) {
            const trace_event *pe = p[i + k % np], *me = m[j + k];
            if (k / np < first) continue;
            int cat = kind_of(pe->cat);
            double dp = pe->end_us - pe->start_us, dm = me->end_us - me->start_us;
            pairs++;
            if (cat >= 0 && cat < NCATS) {
                matched[cat]++;
                if (dp > 0) errs[nerr++] = (rel_err){cat, (dm - dp) / dp};
            }
        }
        i += np, j += nm;
    }
    qsort(errs, (size_t)nerr, sizeof *errs, err_cmp);

    fprintf(out, "trace compare: %d predicted events (one step), %d measured in %d step(s); "
                 "%d pairs compared%s\n", predicted->n, measured->n, n_steps, pairs,
            first ? " over steps 1.. (step 0 warms up)" : "");
    fprintf(out, "%-10s %8s %11s %11s\n", "category", "matched", "median err", "mean err");
    for (int k = 0, lo = 0; k < NCATS; k++) {
        int hi = lo;
        double sum = 0;
        while (hi < nerr && errs[hi].cat == k) sum += errs[hi++].err;
        fprintf(out, "%-10s %8d", kinds[k].cat, matched[k]);
        if (hi > lo) {
            int n = hi - lo;
            double med = n % 2 ? errs[lo + n / 2].err
                               : (errs[lo + n / 2 - 1].err + errs[lo + n / 2].err) / 2;
            fprintf(out, " %+10.2f%% %+10.2f%%\n", 100 * med, 100 * sum / n);
        } else {
            fprintf(out, " %11s %11s\n", "n/a", "n/a");
        }
        lo = hi;
    }
    print_spans(predicted, measured, steps, n_steps, first, out);
    fprintf(out, "unmatched: %d predicted, %d measured\n", only_p, only_m);
    free(p);
    free(m);
    free(errs);
    free(steps);
    return 0;
}
