/* calibrate.c: `weft calibrate [-o FILE]`, the cluster file CPU-backend
 * predictions use.  Two measurements:
 *   1. weft-calibrate on two ranks: sgemm by shape, the runtime's kernels in
 *      isolation, memory copy, MPI latency and bandwidth;
 *   2. a reference GPT (fixed here, not the plan to be predicted) compiled,
 *      built and run for 12 traced steps, on two ranks of one thread and
 *      on one rank with every core.  Isolated kernels run hot in the caches
 *      and miss what happens between them in a real step, so the medians of
 *      the measured forward, backward and optimizer times over the predicted
 *      ones become in-place factors, and the one-rank run gives what more
 *      threads buy a rank in place.
 * The file is written only when everything succeeded (temporary, then
 * renamed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calibrate.h"
#include "datagen.h"
#include "output.h"
#include "pass_list.h"
#include "simulate.h"
#include "trace.h"

static const char REFERENCE_PLAN[] =
    "-- the reference GPT weft calibrate runs in place (written by weft calibrate)\n"
    "return weft.plan {\n"
    "  name = \"calibration-reference\",\n"
    "  model = weft.gpt2 { layers = 2, hidden = 128, heads = 4, seq = 128, vocab = 512 },\n"
    "  cluster = weft.cluster { nodes = 1, devices_per_node = 2, device = weft.gpu.CPU },\n"
    "  mesh = { dp = 2 },\n"
    "  batch = { micro = 8, global = 16 },\n"
    "  optimizer = weft.adamw { lr = 1e-3 },\n"
    "  train = { steps = 8 },\n"
    "  data = { train = \"reference.bin\" },\n"
    "}\n";

/* Runs argv with stdout and stderr going to log; 0 when it exits with 0. */
int calibrate_run(const char *const argv[], const char *log) {
    pid_t pid = fork();
    if (pid == 0) {
        if (log) {
            int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
            if (fd >= 0) {
                dup2(fd, STDOUT_FILENO);
                dup2(fd, STDERR_FILENO);
                close(fd);
            }
        }
        execvp(argv[0], (char *const *)argv);
        perror(argv[0]);
        _exit(127);
    }
    int status = 0;
    if (pid < 0 || waitpid(pid, &status, 0) < 0) return -1;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median duration (seconds) of the events of a category after each rank's
 * first optimizer step (the first step warms caches and pages in arenas). */
static double median_after_first_step(const trace *t, const char *cat) {
    double *d = malloc(sizeof(double) * (size_t)(t->n ? t->n : 1));
    double *warm = malloc(sizeof(double) * (size_t)(t->ranks > 0 ? t->ranks : 1));  /* per rank */
    int n = 0;
    for (int r = 0; warm && r < t->ranks; r++) warm[r] = -1;
    for (int i = 0; warm && i < t->n; i++) {
        const trace_event *e = &t->ev[i];
        if (e->rank >= 0 && e->rank < t->ranks && strcmp(e->cat, "optimizer") == 0 &&
            (warm[e->rank] < 0 || e->end_us < warm[e->rank]))
            warm[e->rank] = e->end_us;
    }
    for (int i = 0; d && warm && i < t->n; i++) {
        const trace_event *e = &t->ev[i];
        if (e->rank >= 0 && e->rank < t->ranks && strcmp(e->cat, cat) == 0 && warm[e->rank] >= 0 &&
            e->start_us >= warm[e->rank])
            d[n++] = (e->end_us - e->start_us) * 1e-6;
    }
    double med = 0;
    if (n > 0) {
        qsort(d, (size_t)n, sizeof *d, cmp_double);
        med = n % 2 ? d[n / 2] : (d[n / 2 - 1] + d[n / 2]) / 2;
    }
    free(d);
    free(warm);
    return med;
}

typedef struct { double f, b, optim; } step_parts;

/* Compiles, builds and runs the reference on `dp` ranks with tracing:
 * measured and predicted times per microbatch. */
static int traced_reference(const char *dir, const char *runtime, int dp, const sim_calibration *cal,
                            step_parts *measured, step_parts *predicted) {
    char plan[PATH_MAX], data[PATH_MAX], out[PATH_MAX], build[PATH_MAX], log[PATH_MAX], tr[PATH_MAX];
    char set_dp[32], set_data[PATH_MAX + 16], err[PATH_MAX + 200];
    snprintf(set_dp, sizeof set_dp, "mesh.dp=%d", dp);
    if (wf_path(plan, sizeof plan, err, sizeof err, "%s/reference.lua", dir) != 0 ||
        wf_path(data, sizeof data, err, sizeof err, "%s/reference.bin", dir) != 0 ||
        wf_path(out, sizeof out, err, sizeof err, "%s/dp%d", dir, dp) != 0 ||
        wf_path(build, sizeof build, err, sizeof err, "%s/build", out) != 0 ||
        wf_path(log, sizeof log, err, sizeof err, "%s/dp%d.log", dir, dp) != 0 ||
        wf_path(tr, sizeof tr, err, sizeof err, "%s/dp%d.trace.json", dir, dp) != 0 ||
        wf_path(set_data, sizeof set_data, err, sizeof err, "data.train=%s", data) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        return -1;
    }
    const char *overrides[] = { set_dp, set_data };
    Program p;
    compile_options opts = { .plan = plan, .overrides = overrides, .n_overrides = 2, .backend = "cpu" };
    if (compile_plan(&p, &opts) != 0 || pass_emit(&p, out, runtime) != 0) {
        program_free(&p);
        return -1;
    }
    int rc = simulate_reference_times(&p, cal, &predicted->f, &predicted->b, &predicted->optim);
    program_free(&p);
    char launch[PATH_MAX];
    if (wf_path(launch, sizeof launch, err, sizeof err, "%s/launch.sh", out) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        return -1;
    }
    const char *configure[] = { "cmake", "-S", out, "-B", build, NULL };
    const char *compile[] = { "cmake", "--build", build, NULL };
    const char *train[] = { launch, "--steps", "12", "--quiet", "--trace", tr, NULL };
    if (rc != 0 || calibrate_run(configure, log) != 0 || calibrate_run(compile, log) != 0 ||
        calibrate_run(train, log) != 0) {
        fprintf(stderr, "weft: error: the reference run on %d rank(s) failed (see %s)\n", dp, log);
        return -1;
    }
    trace t = { 0 };
    if (trace_read_chrome(&t, tr, err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        trace_free(&t);
        return -1;
    }
    measured->f = median_after_first_step(&t, "forward");
    measured->b = median_after_first_step(&t, "backward");
    measured->optim = median_after_first_step(&t, "optimizer");
    trace_free(&t);
    return measured->f > 0 && measured->b > 0 ? 0 : -1;
}

/* Copies the kernel file to out with the in-place lines before its closing
 * brace, through a temporary sibling renamed over out (output.h). */
static int write_cluster(const char *kernels, const char *out, const double inplace[3], double threads) {
    FILE *in = fopen(kernels, "r");
    wf_outfile o;
    char err[PATH_MAX + 200];
    if (!in) {
        fprintf(stderr, "weft: error: cannot read %s\n", kernels);
        return -1;
    }
    if (wf_outfile_open(&o, out, 0666, err, sizeof err) != 0) {
        fclose(in);
        fprintf(stderr, "weft: error: %s\n", err);
        return -1;
    }
    char line[512];
    while (fgets(line, sizeof line, in))
        if (strcmp(line, "}\n") != 0) fputs(line, o.f);
    fclose(in);
    fprintf(o.f, "  -- a reference GPT run in place (traced): measured over predicted per microbatch\n");
    fprintf(o.f, "  inplace = { forward = %.3f, backward = %.3f, optimizer = %.3f },\n", inplace[0], inplace[1],
            inplace[2]);
    fprintf(o.f, "  inplace_threads = %.3f,  -- a lone rank on every core over one thread, in place\n}\n", threads);
    if (wf_outfile_commit(&o, err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        return -1;
    }
    return 0;
}

static int measure(const char *dir, const char *runtime, const char *out) {
    char kernels[PATH_MAX], tool[PATH_MAX], plan[PATH_MAX], data[PATH_MAX], err[PATH_MAX + 200];
    if (wf_path(kernels, sizeof kernels, err, sizeof err, "%s/kernels.lua", dir) != 0 ||
        wf_path(tool, sizeof tool, err, sizeof err, "%s/weft-calibrate", runtime) != 0 ||
        wf_path(plan, sizeof plan, err, sizeof err, "%s/reference.lua", dir) != 0 ||
        wf_path(data, sizeof data, err, sizeof err, "%s/reference.bin", dir) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        return -1;
    }
    if (access(tool, X_OK) != 0) {
        fprintf(stderr, "weft: error: %s is missing (build the runtime first)\n", tool);
        return -1;
    }
    /* Open MPI refuses root unless told; two ranks, since point-to-point needs a partner */
    const char *as_root[] = { "mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root", tool, "-o", kernels, NULL };
    const char *as_user[] = { "mpirun", "-np", "2", "--oversubscribe", tool, "-o", kernels, NULL };
    if (calibrate_run(geteuid() == 0 ? as_root : as_user, NULL) != 0) return -1;
    sim_calibration cal;
    if (simulate_load_calibration(kernels, &cal) != 0) return -1;

    FILE *f = fopen(plan, "w");
    if (!f || fputs(REFERENCE_PLAN, f) < 0 || fclose(f) != 0) return -1;
    if (wf_data_synth(data, 100000, 512, 4, 7, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        return -1;
    }
    step_parts m2, p2, m1, p1;
    if (traced_reference(dir, runtime, 2, &cal, &m2, &p2) != 0 ||
        traced_reference(dir, runtime, 1, &cal, &m1, &p1) != 0)
        return -1;
    /* the optimizer's factor from the one-rank run: on two ranks the traced
     * step end also waits for the last buckets' all-reduce and for the
     * other rank, which simulate prices apart (exposed dp) or not at all */
    double inplace[3] = { m2.f / p2.f, m2.b / p2.b, p1.optim > 0 && m1.optim > 0 ? m1.optim / p1.optim : 1 };
    double threads = (m2.f + m2.b) / (m1.f + m1.b);
    printf("in place: forward %.1f ms (predicted %.1f), backward %.1f ms (%.1f), optimizer %.2f ms (%.2f) on one "
           "rank, %.2f ms on two (the step end's waits included); one rank on every core %.2fx\n", m2.f * 1e3,
           p2.f * 1e3, m2.b * 1e3, p2.b * 1e3, m1.optim * 1e3, p1.optim * 1e3, m2.optim * 1e3, threads);
    if (write_cluster(kernels, out, inplace, threads) != 0) return -1;
    printf("wrote %s\n", out);
    return 0;
}

int calibrate_machine(const char *runtime, const char *out) {
    const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[PATH_MAX], err[PATH_MAX + 200];
    if (wf_path(dir, sizeof dir, err, sizeof err, "%s/weft-calibrate.XXXXXX", tmpdir) != 0) {
        fprintf(stderr, "weft: error: TMPDIR: %s\n", err);
        return -1;
    }
    if (!mkdtemp(dir)) {
        perror("weft: mkdtemp");
        return -1;
    }
    int rc = measure(dir, runtime, out);
    const char *rm[] = { "rm", "-rf", dir, NULL };
    calibrate_run(rm, NULL);
    if (rc != 0) fprintf(stderr, "weft: error: calibration failed; %s is unchanged\n", out);
    return rc;
}
