/* sched_slice.c: the scheduler's slice, from spinning processes that share
 * one CPU (conventions in sched_slice.h). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sched_slice.h"

long sched_slice_edges(const double *stamps, long n, double gap_s, double *edges) {
    long m = 0;
    for (long i = 1; i < n; i++)
        if (stamps[i] - stamps[i - 1] > gap_s) edges[2 * m] = stamps[i - 1], edges[2 * m + 1] = stamps[i], m++;
    return m;
}

long sched_slice_runs(const double *edges, long m, double *run, double *gap) {
    for (long i = 0; i < m; i++) {
        gap[i] = edges[2 * i + 1] - edges[2 * i];
        if (i > 0) run[i - 1] = edges[2 * i] - edges[2 * i - 1];
    }
    return m > 0 ? m - 1 : 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int sched_slice_stat_of(const double *stamps, long n, double gap_s, sched_slice_stat *st) {
    double *edges = malloc(sizeof(double) * (size_t)(4 * (n > 0 ? n : 1)));
    double *run = edges ? edges + 2 * n : NULL, *gap = run ? run + n : NULL;
    long m = edges ? sched_slice_edges(stamps, n, gap_s, edges) : 0;
    long runs = m ? sched_slice_runs(edges, m, run, gap) : 0;
    memset(st, 0, sizeof *st);
    if (runs > 0) {
        st->runs = (int)runs;
        st->run_ms = median(run, (int)runs) * 1e3;
        st->wait_ms = median(gap, (int)m) * 1e3;
    }
    free(edges);
    return runs > 0 ? 0 : -1;
}

/* A descheduled spell is milliseconds; a spinning stamp loop's own steps,
 * and interrupts, are microseconds */
#define GAP_S 100e-6
/* the gaps kept per process: a slice is at least 0.1 ms, so 0.3 s holds
 * far fewer */
#define MAX_GAPS 32768

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* A child: spins on `cpu` for `seconds`, keeping both ends of every gap
 * (sched_slice_edges as it goes) in out[1..], their pairs' count in out[0]. */
static void spin(int cpu, double seconds, double *out) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) _exit(1);
    long m = 0;
    double first = now_s(), prev = first, *e = out + 1;
    for (double t = first; t - first < seconds; prev = t) {
        t = now_s();
        if (t - prev > GAP_S && m < MAX_GAPS) e[2 * m] = prev, e[2 * m + 1] = t, m++;
    }
    out[0] = (double)m;
    _exit(0);
}

int sched_slice_measure(int procs, double seconds, sched_slice_stat *st) {
    cpu_set_t mine;
    int cpu = -1;
    if (sched_getaffinity(0, sizeof mine, &mine) == 0)
        for (int c = 0; c < CPU_SETSIZE && cpu < 0; c++)
            if (CPU_ISSET(c, &mine)) cpu = c;
    if (procs > 16) procs = 16;
    size_t each = 2 * MAX_GAPS + 1;  /* doubles a process */
    double *buf = cpu < 0 ? MAP_FAILED : mmap(NULL, sizeof(double) * each * (size_t)procs, PROT_READ | PROT_WRITE,
                                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    double *run = malloc(sizeof(double) * 2 * MAX_GAPS * (size_t)procs), *gap = run ? run + MAX_GAPS * procs : NULL;
    if (buf == MAP_FAILED || !run) {
        fprintf(stderr, "weft: error: the scheduler slice: no CPU or memory to measure on\n");
        if (buf != MAP_FAILED) munmap(buf, sizeof(double) * each * (size_t)procs);
        free(run);
        return -1;
    }
    int ok = 1;
    pid_t pid[16];
    for (int i = 0; i < procs; i++) {
        buf[i * each] = 0;
        pid[i] = fork();
        if (pid[i] == 0) spin(cpu, seconds, buf + i * each);
        if (pid[i] < 0) ok = 0;
    }
    for (int i = 0; i < procs; i++) {
        int status = 0;
        if (pid[i] > 0 && (waitpid(pid[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status))) ok = 0;
    }
    /* the runs and gaps of every process pooled */
    long runs = 0, gaps = 0;
    for (int i = 0; ok && i < procs; i++) {
        long m = (long)buf[i * each];
        runs += sched_slice_runs(buf + i * each + 1, m, run + runs, gap + gaps);
        gaps += m;
    }
    memset(st, 0, sizeof *st);
    if (ok && runs > 0) {
        st->runs = (int)runs;
        st->run_ms = median(run, (int)runs) * 1e3;
        st->wait_ms = median(gap, (int)gaps) * 1e3;
    }
    free(run);
    munmap(buf, sizeof(double) * each * (size_t)procs);
    if (!(ok && st->runs > 0)) {
        fprintf(stderr, "weft: error: the scheduler slice: the spinning processes %s\n",
                ok ? "were never descheduled" : "failed");
        return -1;
    }
    return 0;
}

double sched_slice_default_ms(int cpus) {
    int n = cpus < 1 ? 1 : cpus > 8 ? 8 : cpus, log2n = 0;
    while ((1 << (log2n + 1)) <= n) log2n++;
    return 0.75 * (1 + log2n);
}
