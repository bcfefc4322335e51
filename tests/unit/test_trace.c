/* test_trace.c: timed traces of pipeline schedules. The unit-cost makespan is
 * timeline.c's; messages delay their receivers by the communication cost; the
 * Chrome JSON parses with the expected events and metadata; the SVG is
 * well-formed XML with a legend and a box per (stage, microbatch); a Chrome
 * trace reads back and compares with itself at zero error, and a copy with
 * slower backwards at +20%.
 * With TRACE_SAMPLES=1 it also writes /tmp/weft_p4m8_1f1b.svg and
 * /tmp/weft_p8m32_zbh1.svg (and .json Chrome traces next to them). */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* open_memstream, mkstemp */
#endif
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "schedule.h"
#include "trace.h"

#include "check.h"

static int build(schedule *s, sched_kind kind, int p, int m)
{
    char err[256];
    if (schedule_build(s, kind, p, m, kind == SCHED_INTERLEAVED ? 2 : 1, err, sizeof err) == 0)
        return 0;
    printf("schedule_build %s p=%d m=%d: %s\n", sched_name(kind), p, m, err);
    return -1;
}

/* Runs fn(out) into a malloc'd string. */
typedef int (*writer)(const trace *t, const char *label, FILE *out);
static char *render(writer fn, const trace *t, const char *label)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = fn(t, label, f);
    fclose(f);
    if (rc != 0) {
        free(buf);
        return NULL;
    }
    return buf;
}

static int write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* ------------------------------------------------ XML well-formedness */

static int name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-' || c == ':' || c == '.';
}

/* Advances past an entity reference at *p ('&'); 0 if it is not one. */
static int entity(const char **p)
{
    static const char *named[] = {"&amp;", "&lt;", "&gt;", "&quot;", "&apos;"};
    for (int i = 0; i < 5; i++)
        if (strncmp(*p, named[i], strlen(named[i])) == 0) {
            *p += strlen(named[i]);
            return 1;
        }
    const char *q = *p + 1;
    if (*q++ != '#') return 0;
    int hex = *q == 'x' ? (q++, 1) : 0, digits = 0;
    while (hex ? isxdigit((unsigned char)*q) : isdigit((unsigned char)*q)) q++, digits++;
    if (!digits || *q != ';') return 0;
    *p = q + 1;
    return 1;
}

/* Balanced, properly nested tags, one root, quoted attributes, no raw '<' or
 * stray '&' in text or attribute values. Comments and a leading <?...?> are
 * allowed; CDATA, DOCTYPE and processing instructions elsewhere are not. */
static int xml_ok(const char *s, char *why, size_t len)
{
    enum { MAXD = 64 };
    const char *open[MAXD];
    size_t olen[MAXD];
    int depth = 0, roots = 0;
    const char *p = s;
    while (isspace((unsigned char)*p)) p++;
    if (strncmp(p, "<?", 2) == 0) {
        p = strstr(p, "?>");
        if (!p) return snprintf(why, len, "unterminated <?"), 0;
        p += 2;
    }
    while (*p) {
        if (*p == '&') {
            if (!entity(&p)) return snprintf(why, len, "bad '&' at offset %ld", (long)(p - s)), 0;
            continue;
        }
        if (*p != '<') {
            if (depth == 0 && !isspace((unsigned char)*p))
                return snprintf(why, len, "text outside the root at offset %ld", (long)(p - s)), 0;
            p++;
            continue;
        }
        if (strncmp(p, "<!--", 4) == 0) {
            const char *q = strstr(p + 4, "-->");
            if (!q) return snprintf(why, len, "unterminated comment"), 0;
            p = q + 3;
            continue;
        }
        int closing = p[1] == '/';
        const char *name = p + 1 + closing, *q = name;
        while (name_char(*q)) q++;
        size_t n = (size_t)(q - name);
        if (n == 0) return snprintf(why, len, "bad tag at offset %ld", (long)(p - s)), 0;
        if (closing) {
            while (isspace((unsigned char)*q)) q++;
            if (*q != '>' || depth == 0 || olen[depth - 1] != n ||
                strncmp(open[depth - 1], name, n) != 0)
                return snprintf(why, len, "unbalanced </%.*s> at offset %ld", (int)n, name,
                                (long)(p - s)),
                       0;
            depth--;
            p = q + 1;
            continue;
        }
        for (;;) { /* attributes */
            int spaced = isspace((unsigned char)*q);
            while (isspace((unsigned char)*q)) q++;
            if (*q == '>' || (q[0] == '/' && q[1] == '>')) break;
            const char *a = q;
            while (name_char(*q)) q++;
            if (q == a || !spaced || *q++ != '=' || (*q != '"' && *q != '\''))
                return snprintf(why, len, "bad attribute in <%.*s> at offset %ld", (int)n, name,
                                (long)(q - s)),
                       0;
            char quote = *q++;
            while (*q && *q != quote) {
                if (*q == '&' && entity(&q)) continue;
                if (*q == '<' || *q == '&')
                    return snprintf(why, len, "bad attribute value at offset %ld", (long)(q - s)), 0;
                q++;
            }
            if (!*q++) return snprintf(why, len, "unterminated attribute value"), 0;
        }
        if (depth == 0 && roots++)
            return snprintf(why, len, "second root element at offset %ld", (long)(p - s)), 0;
        if (*q == '>') {
            if (depth == MAXD) return snprintf(why, len, "nested too deep"), 0;
            open[depth] = name, olen[depth++] = n;
            p = q + 1;
        } else {
            p = q + 2;
        }
    }
    if (depth) return snprintf(why, len, "<%.*s> never closed", (int)olen[depth - 1], open[depth - 1]), 0;
    if (!roots) return snprintf(why, len, "no root element"), 0;
    return 1;
}

/* ---------------------------------------------------------- the checks */

static void check_makespans(void)
{
    const sched_kind kinds[] = {SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED, SCHED_ZBH1};
    for (int k = 0; k < 4; k++) {
        schedule s;
        trace t = {0};
        if (build(&s, kinds[k], 4, 8)) {
            check(0, "%s p=4 m=8 builds", sched_name(kinds[k]));
            continue;
        }
        int rc = trace_from_schedule(&t, &s, 1, 2, 1, 0);
        long want = schedule_makespan(&s);
        double got = trace_makespan(&t);
        check(rc == 0 && want > 0 && got == (double)want,
              "%s p=4 m=8: trace makespan %g, schedule_makespan %ld", sched_name(kinds[k]), got,
              want);
        trace_free(&t);
        schedule_free(&s);
    }
}

static const trace_event *find(const trace *t, int stream, const char *name, int m, int chunk)
{
    for (int i = 0; i < t->n; i++)
        if (t->ev[i].stream == stream && t->ev[i].m == m && t->ev[i].chunk == chunk &&
            strcmp(t->ev[i].name, name) == 0)
            return &t->ev[i];
    return NULL;
}

/* With comm 0.5 every forward of chunk > 0 starts after its activation has
 * arrived, every backward of chunk < last after its gradient has, and compute
 * events on a rank never overlap. */
static void check_comm_delays(void)
{
    schedule s;
    trace t = {0};
    int built = build(&s, SCHED_1F1B, 4, 8) == 0;
    int ok = built && trace_from_schedule(&t, &s, 1, 2, 1, 0.5) == 0;
    int late = 0, arrivals = 0;
    double last_end[4] = {0};
    for (int i = 0; ok && i < t.n; i++) {
        const trace_event *e = &t.ev[i];
        char name[32];
        if (e->stream != 0 || e->m < 0) continue;
        if (e->start_us < last_end[e->rank]) ok = 0;
        last_end[e->rank] = e->end_us;
        const trace_event *msg = NULL;
        if (e->name[0] == 'F' && e->chunk > 0) {
            snprintf(name, sizeof name, "send act m%d", e->m);
            msg = find(&t, 1, name, e->m, e->chunk);
        } else if (e->name[0] == 'B' && e->chunk < s.chunks - 1) {
            snprintf(name, sizeof name, "send grad m%d", e->m);
            msg = find(&t, 1, name, e->m, e->chunk);
        } else {
            continue;
        }
        if (!msg) ok = 0;
        else if (e->start_us < msg->end_us) late++;
        else arrivals++;
    }
    check(ok && late == 0 && arrivals == 2 * 8 * 3 && trace_makespan(&t) > schedule_makespan(&s),
          "1f1b p=4 m=8 comm 0.5: %d receives wait for their message (%d early), makespan %g",
          arrivals, late, trace_makespan(&t));
    trace_free(&t);
    if (built) schedule_free(&s);
}

/* Expected X events on a stage: compute, OPTIM, sends, SENDRECVs, collectives. */
static int expected_events(const schedule *s, int st)
{
    int n = 0;
    for (int i = 0; i < s->n[st]; i++) {
        sched_op op = s->ins[st][i].op;
        n += op != SI_RECV_ACT && op != SI_RECV_GRAD;
    }
    return n;
}

/* Members of a JSON object, "" or NAN when absent or of another type. */
static const char *jstr(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static double jnum(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

static void check_chrome(const schedule *s, const trace *t)
{
    char *json = render(trace_write_chrome, t, "zb-h1 p=4 m=8");
    cJSON *root = json ? cJSON_Parse(json) : NULL;
    const cJSON *evs = cJSON_GetObjectItemCaseSensitive(root, "traceEvents");
    const cJSON *unit = cJSON_GetObjectItemCaseSensitive(root, "displayTimeUnit");
    check(cJSON_IsArray(evs) && cJSON_IsString(unit) && strcmp(unit->valuestring, "ms") == 0,
          "chrome JSON parses: object with traceEvents and displayTimeUnit \"ms\"");

    int count[4] = {0}, names = 0, order_ok = 1;
    double last_end[4] = {0};
    const cJSON *e;
    cJSON_ArrayForEach(e, evs)
    {
        const char *ph = jstr(e, "ph"), *what = jstr(e, "name");
        double fpid = jnum(e, "pid"), tid = jnum(e, "tid");
        char want[32];
        if (!(fpid >= 0 && fpid < 4)) {
            order_ok = 0;
            continue;
        }
        int pid = (int)fpid;
        if (strcmp(ph, "M") == 0) {
            if (strcmp(what, "process_name") == 0) snprintf(want, sizeof want, "rank %d", pid);
            else if (strcmp(what, "process_labels") == 0) snprintf(want, sizeof want, "stage %d", pid);
            else if (strcmp(what, "thread_name") == 0)
                snprintf(want, sizeof want, "%s", tid ? "communication" : "compute");
            else continue;
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            names += strcmp(jstr(args, strcmp(what, "process_labels") ? "name" : "labels"), want) == 0;
        } else if (strcmp(ph, "X") == 0) {
            double ts = jnum(e, "ts"), dur = jnum(e, "dur");
            const cJSON *args = cJSON_GetObjectItemCaseSensitive(e, "args");
            count[pid]++;
            if (isnan(jnum(args, "m")) || isnan(jnum(args, "chunk")) || !(dur >= 0) || isnan(ts))
                order_ok = 0;
            if (tid == 0) {
                if (ts < last_end[pid] - 1e-9) order_ok = 0;
                last_end[pid] = ts + dur;
            }
        }
    }
    int counts_ok = 1;
    for (int r = 0; r < 4; r++) counts_ok &= count[r] == expected_events(s, r);
    check(counts_ok, "chrome X events per rank %d %d %d %d (expected %d %d %d %d)", count[0],
          count[1], count[2], count[3], expected_events(s, 0), expected_events(s, 1),
          expected_events(s, 2), expected_events(s, 3));
    check(names == 4 * 4, "chrome metadata: %d of 16 names (rank R, stage S, compute, communication)",
          names);
    check(order_ok, "chrome compute events per rank are monotone and do not overlap; args m, chunk");
    cJSON_Delete(root);
    free(json);
}

static int legend_has(const char *svg, const char *label)
{
    char want[64];
    snprintf(want, sizeof want, ">%s</text>", label);
    return strstr(svg, want) != NULL;
}

static void check_svg(const trace *small, const trace *big)
{
    char why[160] = "";
    char *svg = render(trace_write_svg, small, "zb-h1 <p=4> & \"m=8\"");
    int ok = svg && xml_ok(svg, why, sizeof why);
    check(ok, "SVG p=4 m=8 is well-formed XML (own checker)%s%s", ok ? "" : ": ", why);

    if (system("command -v xmllint >/dev/null 2>&1") == 0) {
        char path[] = "/tmp/test_trace_XXXXXX", cmd[128];
        int fd = mkstemp(path);
        int lint = fd >= 0 && close(fd) == 0 && svg && write_file(path, svg) == 0;
        snprintf(cmd, sizeof cmd, "xmllint --noout %s", path);
        check(lint && system(cmd) == 0, "SVG p=4 m=8 passes xmllint --noout");
        if (fd >= 0) unlink(path);
    } else {
        printf("skip xmllint not on PATH\n");
    }

    const char *labels[] = {"forward (F)", "backward (B)", "weight gradient (W)", "communication",
                            "optimizer", "idle"};
    int legend = svg != NULL;
    for (int i = 0; i < 6 && svg; i++) legend &= legend_has(svg, labels[i]);
    check(legend, "SVG has a legend <text> for each category");
    free(svg);

    svg = render(trace_write_svg, big, "zb-h1 p=8 m=32");
    ok = svg && xml_ok(svg, why, sizeof why);
    int seen[8][32] = {{0}}, boxes = 0, narrow = 0;
    for (const char *p = svg; ok && (p = strstr(p, "<rect class=\"forward\"")); p++) {
        double w = 0;
        int r, m;
        const char *wa = strstr(p, "width=\""), *title = strstr(p, "<title>");
        if (wa) sscanf(wa, "width=\"%lf\"", &w);
        if (w < 8) narrow++;
        if (title && sscanf(title, "<title>rank %d: F%d", &r, &m) == 2 && r >= 0 && r < 8 && m >= 0 &&
            m < 32)
            seen[r][m] = 1;
    }
    for (int r = 0; r < 8; r++)
        for (int m = 0; m < 32; m++) boxes += seen[r][m];
    check(ok && boxes == 8 * 32 && narrow == 0,
          "SVG p=8 m=32 well-formed, a forward box for %d of 256 (stage, microbatch), %d under 8 px",
          boxes, narrow);
    free(svg);
}

static void check_xml_checker(void)
{
    const char *bad[] = {"<a><b></a></b>", "<a x=1/>", "<a>&</a>", "<a>x < y</a>", "<a/><b/>",
                         "<a x=\"1\"y=\"2\"/>", "<a>"};
    char why[160];
    int rejected = 0;
    for (int i = 0; i < 7; i++) rejected += !xml_ok(bad[i], why, sizeof why);
    check(rejected == 7 && xml_ok("<?xml version=\"1.0\"?>\n<a k='&lt;'><!-- c --><b/>&#38;&#x26;</a>",
                                  why, sizeof why),
          "XML checker rejects %d of 7 malformed documents, accepts a good one", rejected);
}

/* Event names with quotes, backslashes, '<' and a control character survive
 * the Chrome round trip and keep the SVG well-formed. */
static void check_escaping(void)
{
    trace t = {0}, back = {0};
    const char *nasty = "send \"x\\y\" <&> \t\x01 m1";
    char path[] = "/tmp/test_trace_XXXXXX", err[256] = "", why[160] = "";
    int fd = mkstemp(path), ok = fd >= 0 && close(fd) == 0;
    ok = ok && trace_add(&t, 1, 1, nasty, "comm", 1, 0, 0, 2.5) == 0;
    char *json = ok ? render(trace_write_chrome, &t, "name \"with\" quotes") : NULL;
    char *svg = ok ? render(trace_write_svg, &t, nasty) : NULL;
    ok = ok && json && write_file(path, json) == 0 && trace_read_chrome(&back, path, err, sizeof err) == 0;
    ok = ok && back.n == 1 && strcmp(back.ev[0].name, nasty) == 0 && back.ev[0].end_us == 2.5 &&
         back.ranks == 2;
    ok = ok && svg && xml_ok(svg, why, sizeof why);
    check(ok, "escaping: awkward names round-trip through JSON and keep the SVG well-formed %s%s",
          err, why);
    free(json);
    free(svg);
    trace_free(&t);
    trace_free(&back);
    if (fd >= 0) unlink(path);
}

static void check_read_errors(void)
{
    trace t = {0};
    char err[256] = "", path[] = "/tmp/test_trace_XXXXXX";
    int fd = mkstemp(path);
    int missing = trace_read_chrome(&t, "/nonexistent/trace.json", err, sizeof err) == -1 && err[0];
    int bad = fd >= 0 && close(fd) == 0 && write_file(path, "{\"traceEvents\":[{\"ph\":\"X\",") == 0 &&
              (err[0] = 0, trace_read_chrome(&t, path, err, sizeof err)) == -1 && err[0];
    int badts = write_file(path, "[{\"ph\":\"X\",\"name\":\"F0\",\"ts\":\"0\"}]") == 0 &&
                (err[0] = 0, trace_read_chrome(&t, path, err, sizeof err)) == -1 && err[0];
    check(missing && bad && badts && t.n == 0, "read errors: missing file, bad JSON, bad ts (%s)", err);
    trace_free(&t);
    if (fd >= 0) unlink(path);
}

/* Runs trace_compare into a string. */
static char *compare(const trace *p, const trace *m)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return NULL;
    int rc = trace_compare(p, m, f);
    fclose(f);
    if (rc) {
        free(buf);
        return NULL;
    }
    return buf;
}

/* From compare's output: the median and mean error of a category (NAN when
 * n/a or absent), and the largest absolute span error over the ranks
 * (NAN if no rank line parses). */
static void errors_of(const char *text, const char *cat, double *median, double *mean,
                      double *span_err, int *unmatched)
{
    *median = *mean = *span_err = NAN; /* the span error stays NAN if no rank line parses */
    *unmatched = -1;
    for (const char *line = text; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
        char word[32];
        int n, r, a, b;
        double x, y, e;
        if (sscanf(line, "%31s %d %lf%% %lf%%", word, &n, &x, &y) == 4 && strcmp(word, cat) == 0)
            *median = x, *mean = y;
        if (sscanf(line, "%d %lf us %lf us %lf%%", &r, &x, &y, &e) == 4 &&
            (isnan(*span_err) || fabs(e) > *span_err))
            *span_err = fabs(e);
        if (sscanf(line, "unmatched: %d predicted, %d measured", &a, &b) == 2) *unmatched = a + b;
    }
}

static void check_round_trip(const trace *t)
{
    char path[] = "/tmp/test_trace_XXXXXX", err[256] = "";
    int fd = mkstemp(path);
    trace back = {0}, slow = {0};
    char *json = render(trace_write_chrome, t, "round trip");
    int ok = fd >= 0 && close(fd) == 0 && json && write_file(path, json) == 0 &&
             trace_read_chrome(&back, path, err, sizeof err) == 0;
    int same = ok && back.n == t->n && back.ranks == t->ranks;
    for (int i = 0; same && i < t->n; i++)
        same = back.ev[i].rank == t->ev[i].rank && back.ev[i].stream == t->ev[i].stream &&
               back.ev[i].m == t->ev[i].m && back.ev[i].chunk == t->ev[i].chunk &&
               strcmp(back.ev[i].name, t->ev[i].name) == 0 && strcmp(back.ev[i].cat, t->ev[i].cat) == 0 &&
               fabs(back.ev[i].start_us - t->ev[i].start_us) < 1e-6 &&
               fabs(back.ev[i].end_us - t->ev[i].end_us) < 1e-6;
    check(same, "chrome round trip: %d events read back equal %s", back.n, err);

    const char *cats[] = {"forward", "backward", "weight", "comm", "optimizer"};
    char *text = compare(t, &back);
    int zero = text != NULL;
    double med, mean, span_err;
    int unmatched;
    for (int k = 0; zero && k < 5; k++) {
        errors_of(text, cats[k], &med, &mean, &span_err, &unmatched);
        if (k == 4) zero &= isnan(med); /* the simulated optimizer takes no time */
        else zero &= fabs(med) < 1e-9 && fabs(mean) < 1e-9;
        zero &= span_err < 1e-9 && unmatched == 0;
    }
    check(zero, "compare with itself: zero error in every category and span, nothing unmatched");
    free(text);

    for (int i = 0; i < back.n; i++) {
        const trace_event *e = &back.ev[i];
        double dur = e->end_us - e->start_us;
        if (strcmp(e->cat, "backward") == 0) dur *= 1.2;
        trace_add(&slow, e->rank, e->stream, e->name, e->cat, e->m, e->chunk, e->start_us,
                  e->start_us + dur);
    }
    text = compare(t, &slow);
    double fmed, fmean;
    errors_of(text ? text : "", "forward", &fmed, &fmean, &span_err, &unmatched);
    errors_of(text ? text : "", "backward", &med, &mean, &span_err, &unmatched);
    check(text && fabs(med - 20) < 1e-6 && fabs(mean - 20) < 1e-6 && fabs(fmed) < 1e-9 &&
              unmatched == 0,
          "backward durations x1.2: backward error median %+.2f%% mean %+.2f%%, forward %+.2f%%",
          med, mean, fmed);
    if (text && getenv("TRACE_VERBOSE")) fputs(text, stdout);
    free(text);
    free(json);
    trace_free(&back);
    trace_free(&slow);
    if (fd >= 0) unlink(path);
}

static void write_sample(sched_kind kind, int p, int m, const char *stem)
{
    schedule s;
    trace t = {0};
    char path[128], title[96];
    if (build(&s, kind, p, m)) return;
    snprintf(title, sizeof title, "%s, %d stages x %d microbatches (F=1 B=2 W=1 comm=0.25 us)",
             sched_name(kind), p, m);
    if (trace_from_schedule(&t, &s, 1, 2, 1, 0.25) == 0) {
        snprintf(path, sizeof path, "/tmp/%s.svg", stem);
        FILE *f = fopen(path, "w");
        if (f) {
            trace_write_svg(&t, title, f);
            fclose(f);
            printf("wrote %s\n", path);
        }
        snprintf(path, sizeof path, "/tmp/%s.json", stem);
        f = fopen(path, "w");
        if (f) {
            trace_write_chrome(&t, title, f);
            fclose(f);
            printf("wrote %s\n", path);
        }
    }
    trace_free(&t);
    schedule_free(&s);
}

/* A measured run of three steps (the predicted step repeated, step 0 twice as
 * slow, step 2 with backwards 10% slower): step 0 is left out of the category
 * errors, each step gets its own line, and the per-chunk costs and the
 * optimizer time of trace_from_costs show in the events. */
static void check_steps(void)
{
    schedule s;
    trace pred = {0}, meas = {0};
    if (build(&s, SCHED_1F1B, 2, 4)) return;
    const double f[2] = {1, 3}, b[2] = {2, 6}, w[2] = {0, 0}, optim[2] = {0.5, 0.5};
    trace_costs costs = {f, b, w, 0.25, optim};
    int ok = trace_from_costs(&pred, &s, &costs) == 0;
    double f1 = -1, optim_dur = -1, span = trace_makespan(&pred);
    for (int i = 0; ok && i < pred.n; i++) {
        const trace_event *e = &pred.ev[i];
        if (e->rank == 1 && strcmp(e->cat, "forward") == 0) f1 = e->end_us - e->start_us;
        if (strcmp(e->cat, "optimizer") == 0) optim_dur = e->end_us - e->start_us;
    }
    check(ok && f1 == 3 && optim_dur == 0.5, "per-chunk costs: stage 1 forward %g (3), optimizer %g (0.5)",
          f1, optim_dur);
    for (int st = 0; ok && st < 3; st++)
        for (int i = 0; i < pred.n; i++) {
            const trace_event *e = &pred.ev[i];
            double d = e->end_us - e->start_us, at = st * 2 * span + e->start_us;
            if (st == 0) d *= 2;
            if (st == 2 && strcmp(e->cat, "backward") == 0) d *= 1.1;
            trace_add(&meas, e->rank, e->stream, e->name, e->cat, e->m, e->chunk, at, at + d);
        }
    char *text = compare(&pred, &meas);
    double med, mean, span_err;
    int unmatched, step_lines = 0, warm = 0;
    errors_of(text ? text : "", "backward", &med, &mean, &span_err, &unmatched);
    for (const char *l = text; l && (l = strstr(l, "\nstep ")); l++) {
        if (l[6] < '0' || l[6] > '9') continue; /* the table's header */
        step_lines++;
        if (l[6] == '0' && l[8] == '*') warm = 1;
    }
    check(text && step_lines == 3 && warm && fabs(med - 5) < 1e-6 && unmatched == 0,
          "three measured steps: %d step lines, step 0 marked as warm-up, backward median %+.2f%% "
          "(steps 1 and 2: +0%% and +10%%)", step_lines, med);
    if (text && getenv("TRACE_VERBOSE")) fputs(text, stdout);
    free(text);
    trace_free(&pred);
    trace_free(&meas);
    schedule_free(&s);
}

int main(void)
{
    check_makespans();
    check_comm_delays();
    check_steps();

    schedule small, big;
    trace ts = {0}, tb = {0};
    int have_small = build(&small, SCHED_ZBH1, 4, 8) == 0;
    int have_big = build(&big, SCHED_ZBH1, 8, 32) == 0;
    int ok = have_small && have_big && trace_from_schedule(&ts, &small, 1, 2, 1, 0.25) == 0 &&
         trace_from_schedule(&tb, &big, 1, 2, 1, 0.25) == 0;
    check(ok, "zb-h1 p=4 m=8 and p=8 m=32 simulate with comm 0.25 (%d and %d events)", ts.n, tb.n);
    if (ok) {
        check_chrome(&small, &ts);
        check_svg(&ts, &tb);
        check_round_trip(&ts);
    }
    if (have_small) schedule_free(&small);
    if (have_big) schedule_free(&big);
    check_xml_checker();
    check_escaping();
    check_read_errors();
    trace_free(&ts);
    trace_free(&tb);

    const char *samples = getenv("TRACE_SAMPLES");
    if (samples && strcmp(samples, "1") == 0) {
        write_sample(SCHED_1F1B, 4, 8, "weft_p4m8_1f1b");
        write_sample(SCHED_ZBH1, 8, 32, "weft_p8m32_zbh1");
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
