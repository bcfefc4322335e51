/* calibrate_cuda.c: the CUDA cluster file, `weft calibrate --backend cuda`.
 *
 * weft-calibrate-cuda (runtime/tools/calibrate_cuda.c) measures on the
 * device: GEMM TFLOP/s by shape, the attention kernels' forward and backward
 * TFLOP/s, and NCCL's all-reduce bus bandwidth and latency across the ranks
 * it runs on.  This file runs it, refuses a broken measurement (a zero,
 * negative or non-finite figure: a timer that read 0, a kernel that did not
 * run) and writes the cluster file, and reads such files for `weft simulate
 * --calibration` (simulate.c applies them to the GPU cost model). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <lauxlib.h>

#include "calibrate.h"
#include "output.h"
#include "simulate.h"

/* A figure a sane measurement gives: finite and above zero. */
static int sane(double v) { return isfinite(v) && v > 0; }

static int field(lua_State *L, int table, const char *k, double *v) {
    lua_getfield(L, table, k);
    int ok = lua_type(L, -1) == LUA_TNUMBER;
    if (ok) *v = lua_tonumber(L, -1);
    lua_pop(L, 1);
    return ok;
}

#define BROKEN "a broken measurement (a zero or non-finite time); measure again with weft calibrate --backend cuda"

int calibration_cuda_read(lua_State *L, const char *path, sim_calibration *cal) {
    int t = lua_gettop(L);
    cal->cuda = 1;
    lua_getfield(L, t, "gemm");
    if (!lua_istable(L, -1) || lua_rawlen(L, -1) == 0) {
        wf_error("%s: gemm: needs a list of { M, N, K, TFLOP/s } rows (write it with weft calibrate --backend cuda)",
                 path);
        return -1;
    }
    int n = (int)lua_rawlen(L, -1);
    if (n > SIM_CUDA_MAX_GEMM) {
        wf_error("%s: gemm: %d rows, at most %d", path, n, SIM_CUDA_MAX_GEMM);
        return -1;
    }
    static const char *const col[] = { "M", "N", "K", "TFLOP/s" };
    for (int i = 0; i < n; i++) {
        lua_rawgeti(L, -1, i + 1);
        for (int j = 0; j < 4; j++) {
            lua_rawgeti(L, -1, j + 1);
            double v = lua_type(L, -1) == LUA_TNUMBER ? lua_tonumber(L, -1) : NAN;
            lua_pop(L, 1);
            if (!sane(v)) {
                wf_error("%s: gemm row %d: %s is %g, not a positive finite number: %s", path, i + 1, col[j], v,
                         BROKEN);
                return -1;
            }
            cal->gemm[i][j] = v;
        }
        lua_pop(L, 1);
    }
    cal->n_gemm = n;
    lua_pop(L, 1);
    lua_getfield(L, t, "attention");
    if (lua_istable(L, -1)) {
        int a = lua_gettop(L);
        double head = 0;
        if (!field(L, a, "forward", &cal->att_tflops[0]) || !field(L, a, "backward", &cal->att_tflops[1]) ||
            !sane(cal->att_tflops[0]) || !sane(cal->att_tflops[1])) {
            wf_error("%s: attention: forward and backward TFLOP/s must be positive finite numbers (%g, %g): %s",
                     path, cal->att_tflops[0], cal->att_tflops[1], BROKEN);
            return -1;
        }
        field(L, a, "head", &head);
        cal->att_head = (int)head;
    }
    lua_pop(L, 1);
    lua_getfield(L, t, "nccl");
    if (lua_istable(L, -1)) {
        int a = lua_gettop(L);
        double gpus = 0;
        if (!field(L, a, "bus_gbs", &cal->nccl_bus_gbs) || !field(L, a, "latency_us", &cal->nccl_latency_us) ||
            !sane(cal->nccl_bus_gbs) || !sane(cal->nccl_latency_us)) {
            wf_error("%s: nccl: bus_gbs and latency_us must be positive finite numbers (%g, %g): %s", path,
                     cal->nccl_bus_gbs, cal->nccl_latency_us, BROKEN);
            return -1;
        }
        field(L, a, "gpus", &gpus);
        cal->nccl_gpus = (int)gpus;
    }
    lua_pop(L, 1);
    cal->loaded = 1;
    return 0;
}

/* Copies `from` to `out` through a temporary sibling (output.h). */
static int copy_file(const char *from, const char *out) {
    FILE *in = fopen(from, "r");
    wf_outfile o;
    char err[PATH_MAX + 200], buf[4096];
    if (!in) {
        wf_error("cannot read %s", from);
        return -1;
    }
    if (wf_outfile_open(&o, out, 0666, err, sizeof err) != 0) {
        fclose(in);
        wf_error("%s", err);
        return -1;
    }
    size_t k;
    while ((k = fread(buf, 1, sizeof buf, in)) > 0) fwrite(buf, 1, k, o.f);
    fclose(in);
    if (wf_outfile_commit(&o, err, sizeof err) != 0) {
        wf_error("%s", err);
        return -1;
    }
    return 0;
}

int calibrate_cuda(const char *runtime, int gpus, int quick, const char *out) {
    char tool[PATH_MAX], dir[PATH_MAX], measured[PATH_MAX], np[16], err[PATH_MAX + 200];
    const char *tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    /* WEFT_CALIBRATE_CUDA: another build of the tool (the emulator's, in tests) */
    const char *env = getenv("WEFT_CALIBRATE_CUDA");
    if (env ? wf_path(tool, sizeof tool, err, sizeof err, "%s", env)
            : wf_path(tool, sizeof tool, err, sizeof err, "%s/cuda/weft-calibrate-cuda", runtime)) {
        wf_error("%s", err);
        return -1;
    }
    if (access(tool, X_OK) != 0) {
        wf_error("%s is missing (build the runtime with the CUDA toolkit and NCCL first)", tool);
        return -1;
    }
    if (wf_path(dir, sizeof dir, err, sizeof err, "%s/weft-calibrate-cuda.XXXXXX", tmpdir) != 0 ||
        !mkdtemp(dir) || wf_path(measured, sizeof measured, err, sizeof err, "%s/measured.lua", dir) != 0) {
        wf_error("TMPDIR: cannot make a temporary folder");
        return -1;
    }
    snprintf(np, sizeof np, "%d", gpus);
    /* one rank per GPU; Open MPI refuses root unless told */
    const char *argv[12];
    int k = 0;
    argv[k++] = "mpirun", argv[k++] = "-np", argv[k++] = np, argv[k++] = "--oversubscribe";
    if (geteuid() == 0) argv[k++] = "--allow-run-as-root";
    argv[k++] = tool, argv[k++] = "-o", argv[k++] = measured;
    if (quick) argv[k++] = "--quick";
    argv[k] = NULL;
    int rc = -1;
    sim_calibration cal;
    if (calibrate_run(argv, NULL) != 0)
        wf_error("%s on %d rank(s) failed", tool, gpus);
    else if (simulate_load_calibration(measured, &cal) == 0 && copy_file(measured, out) == 0)
        rc = 0;
    unlink(measured);
    rmdir(dir);
    if (rc != 0) {
        wf_error("calibration failed; %s is unchanged", out);
        return -1;
    }
    printf("%d GEMM shapes", cal.n_gemm);
    if (cal.att_tflops[0] > 0)
        printf(", attention %.3g / %.3g TFLOP/s (forward / backward)", cal.att_tflops[0], cal.att_tflops[1]);
    if (cal.nccl_bus_gbs > 0) printf(", NCCL bus %.3g GB/s on %d GPUs", cal.nccl_bus_gbs, cal.nccl_gpus);
    printf("; wrote %s\n", out);
    return 0;
}
