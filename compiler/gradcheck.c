/* gradcheck.c: the gradient proof of user kernels, run by `weft check`,
 * `compile`, `inspect` and `simulate` before anything is written.
 *
 * Each kernel's checked functions are built into a small harness with the
 * system C compiler (cc), in a temporary folder that is removed afterwards
 * (only the three files written there, then the folder).  The harness
 * compiles the functions with float as double and the math library's float
 * functions as their double forms, so that central finite differences of
 * the forward are accurate to ~1e-10 (step h = 1e-5 max(1, |x|): truncation
 * h^2 |f'''| / 6, rounding 1e-16 |f| / h).  At 256 random inputs, 64 at
 * each of the scales 0.1, 1, 4 and 16, it compares the backward with
 * dy * (f(x + h) - f(x - h)) / 2h and refuses the kernel when
 *   |backward - fd| > 1e-5 max(1, |fd|)
 * anywhere (a correct kernel differs only by its float literals, ~1e-7), or
 * when forward or backward is not finite; the message names the worst
 * input and both values.
 * A rowwise kernel is proved at n = 1, 2, 3, 8 and 33, 8 random rows each
 * (x at the four scales, w = 1 + 0.5 u, dy = 2 u): dx_j and dw_j against
 *   sum_i dy_i (f(x + h e_j)_i - f(x - h e_j)_i) / 2h
 * (and the same in w), under the same bound, h = 1e-5 max(1, |x_j|); the
 * backward adds into dx and dw, which start at 0.  The inputs come from a fixed generator: the proof
 * gives the same answer every time. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "user_kernel.h"

extern char **environ;

#define GRADCHECK_BOUND 1e-5

/* The harness's main for one kernel: writes one line into argv[1]. */
static void write_main(FILE *f, const user_kernel *k) {
    int two = k->kind == UK_ELEMENTWISE2;
    fprintf(f, "#undef float\n#define TWO %d\n", two);
    fprintf(f, ""
               "static unsigned long long seed = 0x9e3779b97f4a7c15ULL;\n"
               "static double uniform(void) { /* [-1, 1) */\n"
               "    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;\n"
               "    return (double)(seed >> 11) / 4503599627370496.0 - 1.0;\n}\n"
               "static double step(double x) { return 1e-5 * (fabs(x) > 1 ? fabs(x) : 1); }\n"
               "static int check(FILE *out, const char *what, double x, double y, double dy, double got, double fd,\n"
               "                 double *worst, char *line, size_t n) {\n"
               "    char in[160];\n"
               "    if (TWO) snprintf(in, sizeof in, \"%%s at x=%%.9g y=%%.9g dout=%%.9g\", what, x, y, dy);\n"
               "    else snprintf(in, sizeof in, \"at x=%%.9g dy=%%.9g\", x, dy);\n"
               "    if (!isfinite(got)) { fprintf(out, \"nan backward %%s (%%s)\\n\", in, isnan(got) ? \"nan\" : \"inf\"); return 1; }\n"
               "    if (!isfinite(fd)) { fprintf(out, \"nan forward %%s (%%s)\\n\", in, isnan(fd) ? \"nan\" : \"inf\"); return 1; }\n"
               "    double err = fabs(got - fd) / (fabs(fd) > 1 ? fabs(fd) : 1);\n"
               "    if (err >= *worst) { *worst = err;\n"
               "        snprintf(line, n, \"%%s: backward %%.9g, central difference %%.9g (error %%.3g)\", in, got, fd, err); }\n"
               "    return 0;\n}\n"
               "int main(int argc, char **argv) {\n"
               "    FILE *out = argc > 1 ? fopen(argv[1], \"w\") : NULL;\n"
               "    if (!out) return 2;\n"
               "    static const double scales[4] = { 0.1, 1, 4, 16 };\n"
               "    double worst = 0; char line[512] = \"\";\n"
               "    for (int s = 0; s < 4; s++)\n"
               "        for (int i = 0; i < 64; i++) {\n"
               "            double x = scales[s] * uniform(), y = scales[s] * uniform(), dy = 2 * uniform();\n"
               "            double hx = step(x), hy = step(y);\n");
    if (!two)
        fprintf(f, "            (void)y, (void)hy;\n"
                   "            double fd = dy * (%s(x + hx) - %s(x - hx)) / (2 * hx);\n"
                   "            if (check(out, \"dx\", x, 0, dy, %s(x, dy), fd, &worst, line, sizeof line)) return 0;\n",
                k->fwd, k->fwd, k->bwd);
    else
        fprintf(f, "            double gx = NAN, gy = NAN;\n"
                   "            %s(x, y, dy, &gx, &gy);\n"
                   "            double fdx = dy * (%s(x + hx, y) - %s(x - hx, y)) / (2 * hx);\n"
                   "            double fdy = dy * (%s(x, y + hy) - %s(x, y - hy)) / (2 * hy);\n"
                   "            if (check(out, \"dx\", x, y, dy, gx, fdx, &worst, line, sizeof line)) return 0;\n"
                   "            if (check(out, \"dy\", x, y, dy, gy, fdy, &worst, line, sizeof line)) return 0;\n",
                k->bwd, k->fwd, k->fwd, k->fwd, k->fwd);
    fprintf(f, "        }\n"
               "    fprintf(out, \"%%s %%s\\n\", worst > %g ? \"bad\" : \"ok\", line);\n"
               "    return fclose(out) != 0;\n}\n", GRADCHECK_BOUND);
}

/* The harness's main for a rowwise kernel (params: with w and dw). */
static void write_main_row(FILE *f, const user_kernel *k) {
    int w = k->params;
    fprintf(f, "#undef float\n"
               "static unsigned long long seed = 0x9e3779b97f4a7c15ULL;\n"
               "static double uniform(void) { /* [-1, 1) */\n"
               "    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;\n"
               "    return (double)(seed >> 11) / 4503599627370496.0 - 1.0;\n}\n"
               "#define M 33\n"
               "static double x[M], w[M], dy[M], y[M], dx[M], dw[M], xp[M], yp[M], ym[M];\n"
               "static void fwd(int n, const double *xx, const double *ww, double *yy) {\n"
               "    (void)ww; %s(n, xx, %syy);\n}\n"
               "/* sum_i dy_i (f(xx)_i at +h - at -h) / 2h in input `which` (0 x, 1 w) at j */\n"
               "static double fd(int n, int which, int j) {\n"
               "    double *v = which ? w : x, keep = v[j], h = 1e-5 * (fabs(keep) > 1 ? fabs(keep) : 1);\n"
               "    v[j] = keep + h; fwd(n, x, w, yp);\n    v[j] = keep - h; fwd(n, x, w, ym);\n    v[j] = keep;\n"
               "    double s = 0;\n    for (int i = 0; i < n; i++) s += dy[i] * (yp[i] - ym[i]);\n"
               "    return s / (2 * h);\n}\n"
               "int main(int argc, char **argv) {\n"
               "    FILE *out = argc > 1 ? fopen(argv[1], \"w\") : NULL;\n"
               "    if (!out) return 2;\n"
               "    static const double scales[4] = { 0.1, 1, 4, 16 };\n"
               "    static const int sizes[5] = { 1, 2, 3, 8, M };\n"
               "    double worst = 0; char line[512] = \"\";\n"
               "    for (int z = 0; z < 5; z++)\n"
               "        for (int r = 0; r < 8; r++) {\n"
               "            int n = sizes[z];\n"
               "            for (int i = 0; i < n; i++) {\n"
               "                x[i] = scales[r %% 4] * uniform(); w[i] = 1 + 0.5 * uniform(); dy[i] = 2 * uniform();\n"
               "                dx[i] = 0; dw[i] = 0;\n            }\n"
               "            %s(n, x, %sdy, dx%s);\n"
               "            for (int which = 0; which < %d; which++)\n"
               "                for (int j = 0; j < n; j++) {\n"
               "                    double got = which ? dw[j] : dx[j], want = fd(n, which, j);\n"
               "                    char in[200];\n"
               "                    snprintf(in, sizeof in, \"d%%s[%%d] at n=%%d, x[%%d]=%%.9g w[%%d]=%%.9g dy[%%d]=%%.9g\",\n"
               "                             which ? \"w\" : \"x\", j, n, j, x[j], j, w[j], j, dy[j]);\n"
               "                    if (!isfinite(got)) { fprintf(out, \"nan backward %%s (%%s)\\n\", in, isnan(got) ? \"nan\" : \"inf\"); return 0; }\n"
               "                    if (!isfinite(want)) { fprintf(out, \"nan forward %%s (%%s)\\n\", in, isnan(want) ? \"nan\" : \"inf\"); return 0; }\n"
               "                    double err = fabs(got - want) / (fabs(want) > 1 ? fabs(want) : 1);\n"
               "                    if (err >= worst) { worst = err;\n"
               "                        snprintf(line, sizeof line, \"%%s: backward %%.9g, central difference %%.9g (error %%.3g)\", in, got, want, err); }\n"
               "                }\n"
               "        }\n"
               "    (void)w; (void)dw;\n"
               "    fprintf(out, \"%%s %%s\\n\", worst > %g ? \"bad\" : \"ok\", line);\n"
               "    return fclose(out) != 0;\n}\n",
            k->fwd, w ? "ww, " : "", k->bwd, w ? "w, " : "", w ? ", dw" : "", w ? 2 : 1, GRADCHECK_BOUND);
}

static const char *const DOUBLE_FORMS[] = {
    "sqrt", "cbrt", "exp", "exp2", "expm1", "log", "log2", "log10", "log1p", "pow", "hypot", "sin", "cos", "tan",
    "asin", "acos", "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "tgamma",
    "lgamma", "fabs", "fmin", "fmax", "fma", "fmod", "floor", "ceil", "round", "trunc", "rint", "nearbyint",
    "copysign", "fdim", "remainder",
};

static int write_harness(const char *path, const user_kernel *k) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fprintf(f, "/* weft's gradient proof of %s (gradcheck.c) */\n#include <float.h>\n#include <math.h>\n"
               "#include <stdio.h>\n#define WF_KERNEL_FN\n", k->source);
    /* the kernel's own includes before float becomes double (they come
     * first in its text; included again below, they are guarded no-ops) */
    for (const char *q = k->text ? k->text : ""; !strncmp(q, "#include", 8); q = strchr(q, '\n') + 1)
        fprintf(f, "%.*s\n", (int)(strchr(q, '\n') - q), q);
    for (size_t i = 0; i < sizeof DOUBLE_FORMS / sizeof *DOUBLE_FORMS; i++)
        fprintf(f, "#define %sf %s\n", DOUBLE_FORMS[i], DOUBLE_FORMS[i]);
    fprintf(f, "#define float double\n%s\n", k->text ? k->text : "");
    if (k->kind == UK_ROWWISE) write_main_row(f, k);
    else write_main(f, k);
    return fclose(f) == 0 ? 0 : -1;
}

/* Runs argv, its output to /dev/null (the compiler's to stderr); its exit status or -1. */
static int run(char *const argv[], int quiet) {
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    if (quiet) posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid;
    int rc = posix_spawnp(&pid, argv[0], &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) return -1;
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int prove(const Program *p, const user_kernel *k, const char *dir) {
    char src[4200], exe[4200], res[4200];
    snprintf(src, sizeof src, "%s/harness.c", dir);
    snprintf(exe, sizeof exe, "%s/harness", dir);
    snprintf(res, sizeof res, "%s/result.txt", dir);
    const char *where = p->plan_path;
    int rc = -1;
    if (write_harness(src, k) != 0) {
        wf_error("%s:%d: kernel: cannot write the gradient harness in %s", where, k->line, dir);
        goto done;
    }
    const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
    char *cc_argv[] = { (char *)cc, "-std=c11", "-O1", "-o", exe, src, "-lm", NULL };
    if (run(cc_argv, 1) != 0) {
        wf_error("%s:%d: kernel: the system C compiler (%s) could not build the gradient harness of %s "
                 "(or skip the proof with --no-gradcheck)", where, k->line, cc, k->source);
        goto done;
    }
    char *h_argv[] = { exe, res, NULL };
    int hr = run(h_argv, 1);
    FILE *f = fopen(res, "r");
    char line[600] = "";
    if (f) {
        if (!fgets(line, sizeof line, f)) line[0] = 0;
        fclose(f);
    }
    line[strcspn(line, "\n")] = 0;
    if (hr != 0 || !line[0]) {
        wf_error("%s:%d: kernel: the gradient harness of %s crashed or exited %d", where, k->line, k->source, hr);
    } else if (!strncmp(line, "ok", 2)) {
        rc = 0;
    } else if (!strncmp(line, "nan backward", 12)) {
        wf_error("%s:%d: kernel.backward: %s is not finite %s where the forward is finite (rule: "
                 "gradient proof)", where, k->line, k->bwd, line + 13);
    } else if (!strncmp(line, "nan forward", 11)) {
        wf_error("%s:%d: kernel.forward: %s is not finite near %s (rule: gradient proof; a kernel must be "
                 "finite for finite inputs)", where, k->line, k->fwd, line + 12);
    } else {
        wf_error("%s:%d: kernel.backward: %s is not the gradient of %s: worst input %s; the bound is %g "
                 "relative to max(1, |difference|), central differences of the forward in double precision "
                 "(rule: gradient proof)", where, k->line, k->bwd, k->fwd, line + 4, GRADCHECK_BOUND);
    }
done:
    unlink(src);
    unlink(exe);
    unlink(res);
    return rc;
}

/* Kernels proved in this process (`weft plan` compiles a plan many times):
 * FNV-1a of the checked text and the two names. */
static unsigned long long proved[64];
static int n_proved;

static unsigned long long kernel_hash(const user_kernel *k) {
    unsigned long long h = 1469598103934665603ULL;
    const char *parts[] = { k->text ? k->text : "", "\n", k->fwd, "\n", k->bwd, k->kind == UK_ROWWISE ? (k->params ? "rw" : "r") : k->kind ? "2" : "1" };
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
        for (const char *q = parts[i]; *q; q++) h = (h ^ (unsigned char)*q) * 1099511628211ULL;
    return h;
}

static int was_proved(const user_kernel *k) {
    unsigned long long h = kernel_hash(k);
    for (int i = 0; i < n_proved; i++)
        if (proved[i] == h) return 1;
    return 0;
}

int user_kernel_gradcheck(const Program *p) {
    int todo = 0;
    for (int i = 0; i < p->n_kernels; i++) todo += !was_proved(&p->kernels[i]);
    if (todo == 0) return 0;
    const char *tmp = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    char dir[4096];
    if (snprintf(dir, sizeof dir, "%s/weft-gradcheck-XXXXXX", tmp) >= (int)sizeof dir || !mkdtemp(dir)) {
        wf_error("%s: kernel: cannot make a temporary folder in %s for the gradient proof: %s", p->plan_path, tmp,
                 strerror(errno));
        return -1;
    }
    int rc = 0;
    for (int i = 0; i < p->n_kernels && rc == 0; i++) {
        if (was_proved(&p->kernels[i])) continue;
        rc = prove(p, &p->kernels[i], dir);
        if (rc == 0 && n_proved < (int)(sizeof proved / sizeof *proved)) proved[n_proved++] = kernel_hash(&p->kernels[i]);
    }
    rmdir(dir);  /* empty now: each proof removed its files */
    return rc;
}
