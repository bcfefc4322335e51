/* main.c: the `weft` command line.  Exit codes: 0 ok, 1 plan (or input)
 * error, 2 usage error. */
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "calibrate.h"
#include "ckpt_diff.h"
#include "ckpt_manifest.h"
#include "import_ds.h"
#include "inspect.h"
#include "output.h"
#include "pass_list.h"
#include "plan_search.h"
#include "simulate.h"
#include "trace.h"
#include "datagen.h"
#include "datagen_vlm.h"
#include "program.h"
#include "version.h"

#ifndef WEFT_RUNTIME_DIR
#define WEFT_RUNTIME_DIR "runtime"
#endif

enum { EXIT_OK = 0, EXIT_PLAN = 1, EXIT_USAGE = 2 };

static const char USAGE_HEAD[] =
    "usage: weft <command> [options]\n"
    "\n"
    "commands:\n"
    "  check PLAN                 validate a plan; print parameters, FLOPs per step, mesh,\n"
    "                             buckets and memory per rank\n"
    "  compile PLAN -o DIR        write one C program per pipeline stage, a rank table,\n"
    "                             CMakeLists.txt and launch.sh into DIR\n"
    "  inspect PLAN [--rank R] [--format text|chrome|svg] [-o FILE]\n"
    "                             each rank's instruction stream and the schedule's\n"
    "                             timeline (text Gantt, Chrome trace JSON, SVG)\n"
    "  simulate PLAN [--format text|chrome|svg] [-o FILE] [--calibration FILE]\n"
    "                             predicted iteration time, tokens/s, MFU, bubble,\n"
    "                             communication and memory per rank; no code emitted\n"
    "  plan PLAN [--gpus N] [--global-batch B] [--top K] [--objective time|memory]\n"
    "       [-o BEST.lua] [--scaling] [--max-priced N] [--calibration FILE] [--print-sets]\n"
    "                             search dp x tp x pp, sequence parallelism, microbatch,\n"
    "                             schedule, ZeRO, recompute and offload for the fastest\n"
    "                             layout that fits; -o writes it as a plan\n"
    "  import-deepspeed DS.json --model PLAN --world N -o OUT.lua\n"
    "                             translate a DeepSpeed config into a plan (model from PLAN)\n"
    "  calibrate [-o FILE]        measure this machine for CPU-backend predictions (kernels\n"
    "                             on 2 ranks, then a reference GPT traced in place;\n"
    "                             default cluster.lua)\n"
    "  calibrate --backend cuda [--gpus N] [-o FILE]\n"
    "                             measure this node's GPUs (GEMM shapes, attention, NCCL\n"
    "                             all-reduce on N GPUs) for simulate --backend cuda\n"
    "  trace compare PRED MEAS    error of a measured Chrome trace against a predicted one\n"
    "  data text FILE -o OUT.bin  byte-level tokens (vocab 256) of a text file\n"
    "  data synth -o OUT.bin      a synthetic Markov language with a known entropy floor\n"
    "        [--tokens N] [--vocab V] [--branch K] [--seed S]\n"
    "  data vlm IMAGES_DIR CAPTIONS.jsonl -o OUT.bin [--image 224] [--patch 16] [--seq 512]\n"
    "           [--vocab 258] [--image-token 256] [--pad-token ID]\n"
    "                             image + caption records from PNG/JPEG files (WVLM format)\n"
    "  data vlm-synth -o OUT.bin [--count 1024] [--seed 1] [--image 32] [--patch 8] ...\n"
    "                             drawn shapes with captions that describe them; prints the\n"
    "                             entropy floors with and without the image\n"
    "  ckpt diff A B [--norm-tol R [--from A0]] [--bound B] [--tol R] [--atol A]\n"
    "        [--noise PAT:LO:HI]  compare two checkpoints tensor by tensor (no option:\n"
    "                             bit identity; else ||a-b|| <= R ||a|| (R ||a-a0|| with\n"
    "                             --from) and max|a-b| <= B for every tensor, or\n"
    "                             max|a-b| <= A + R max|a|; --noise: elements LO..HI-1\n"
    "                             of the tensors PAT matches are held to B only); A, B:\n"
    "                             .safetensors files, sharded sets (BASE.safetensors.\n"
    "                             index.json) or checkpoint folders (their model)\n"
    "  ckpt verify DIR            check a checkpoint folder against its manifest (sizes,\n"
    "                             CRC-32C of every file and tensor, metadata, finite values)\n"
    "\n"
    "options for check and compile:\n"
    "  --set FIELD=VALUE          override a plan field, e.g. --set mesh.dp=4 (repeatable)\n";

static const char USAGE_TAIL[] =
    "  --runtime DIR              weft runtime build the generated CMakeLists.txt uses\n"
    "  --no-gradcheck             skip the gradient proof of user kernels (a warning)\n"
    "  --backend NAME             code generator: C for CPUs (cpu, the default), or CUDA\n"
    "                             C++ for NVIDIA GPUs (cuda: cuBLASLt, NCCL; see README);\n"
    "                             check and simulate plan that backend's memory too\n"
    "  --help, --version\n"
    "\n"
    "exit codes: 0 ok, 1 plan or input error, 2 usage error\n";


/* The usage text; the --dump line lists pass_list.c's passes, wrapped. */
static void print_usage(FILE *out) {
    fputs(USAGE_HEAD, out);
    const char *lead = "  --dump=PASS                print the IR after PASS to stdout: ";
    const char *indent = "                             ";
    fputs(lead, out);
    int col = (int)strlen(lead);
    const char *names = pass_names();
    for (int first = 1; *names; first = 0) {
        size_t n = strcspn(names, " ");  /* "check," */
        if (col + 1 + (int)n > 90) {
            fprintf(out, "\n%s", indent);
            col = (int)strlen(indent);
        } else if (!first) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)n, names);
        col += (int)n;
        names += n;
        while (*names == ' ') names++;
    }
    fputc('\n', out);
    fputs(USAGE_TAIL, out);
}

static int usage_error(const char *msg) {
    fprintf(stderr, "weft: %s\n(see weft --help)\n", msg);
    return EXIT_USAGE;
}

/* check and compile share their options. */
typedef struct {
    const char *plan, *out, *dump, *runtime, *format, *calibration;
    const char *backend;  /* "cpu" or "cuda" */
    int rank;
    const char *overrides[64];
    int n_overrides;
    int no_gradcheck;
} plan_args;

/* FIELD of --set FIELD=VALUE: names of letters, digits and '_' joined by
 * single dots ("mesh.dp", "pipeline.stages.1"); no empty name. */
static int field_path(const char *s) {
    size_t n = strcspn(s, "=");
    for (size_t i = 0, len = 0; i <= n; i++) {
        if (i == n || s[i] == '.') {
            if (len == 0) return 0;
            len = 0;
        } else if (isalnum((unsigned char)s[i]) || s[i] == '_') {
            len++;
        } else {
            return 0;
        }
    }
    return 1;
}

static int parse_plan_args(int argc, char **argv, plan_args *a, int want_out) {
    memset(a, 0, sizeof *a);
    a->format = "text";
    a->backend = "cpu";
    a->rank = -1;
    a->runtime = getenv("WEFT_RUNTIME") ? getenv("WEFT_RUNTIME") : WEFT_RUNTIME_DIR;
    for (int i = 0; i < argc; i++) {
        const char *s = argv[i];
        if (strcmp(s, "-o") == 0 && want_out) {  /* compile: required; inspect: optional */
            if (++i >= argc) return usage_error("-o needs a folder");
            a->out = argv[i];
        } else if (strcmp(s, "--set") == 0) {
            if (++i >= argc || !strchr(argv[i], '=') || !field_path(argv[i]))
                return usage_error("--set needs FIELD=VALUE, FIELD names joined by '.' "
                                   "(letters, digits, '_'), e.g. --set mesh.dp=4");
            if (a->n_overrides == 64) return usage_error("too many --set options (64 at most)");
            a->overrides[a->n_overrides++] = argv[i];
        } else if (strncmp(s, "--dump=", 7) == 0) {
            a->dump = s + 7;
            if (!pass_known(a->dump)) {
                fprintf(stderr, "weft: --dump: unknown pass '%s' (valid: %s)\n", a->dump, pass_names());
                return usage_error("unknown pass");
            }
        } else if (strcmp(s, "--format") == 0 && want_out == 2) {
            if (++i >= argc) return usage_error("--format needs text, chrome or svg");
            a->format = argv[i];
            if (strcmp(a->format, "text") && strcmp(a->format, "chrome") && strcmp(a->format, "svg"))
                return usage_error("--format: valid formats are text, chrome, svg");
        } else if (strcmp(s, "--rank") == 0 && want_out == 2) {
            char *end;
            if (++i >= argc) return usage_error("--rank needs a rank number");
            a->rank = (int)strtol(argv[i], &end, 10);
            if (*end || a->rank < 0) return usage_error("--rank needs a rank number >= 0");
        } else if (strcmp(s, "--calibration") == 0 && want_out == 2) {
            if (++i >= argc) return usage_error("--calibration needs a file written by weft-calibrate");
            a->calibration = argv[i];
        } else if (strcmp(s, "--runtime") == 0) {
            if (++i >= argc) return usage_error("--runtime needs a folder");
            a->runtime = argv[i];
        } else if (strcmp(s, "--no-gradcheck") == 0) {
            a->no_gradcheck = 1;
        } else if (strcmp(s, "--backend") == 0) {
            if (++i >= argc) return usage_error("--backend needs a name");
            if (!backend_find(argv[i])) {
                fprintf(stderr, "weft: --backend: unknown backend '%s' (valid: %s)\n", argv[i], backend_names());
                return usage_error("unknown backend");
            }
            a->backend = argv[i];
        } else if (s[0] == '-') {
            fprintf(stderr, "weft: unknown option %s\n", s);
            return usage_error("unknown option");
        } else if (!a->plan) {
            a->plan = s;
        } else {
            return usage_error("more than one plan given");
        }
    }
    if (!a->plan) return usage_error("no plan given");
    if (want_out == 1 && !a->out) return usage_error("compile needs -o DIR");
    return EXIT_OK;
}

/* Every command runs the passes through compile_plan (pass_list.c). */
static int run_passes(Program *p, const plan_args *a) {
    compile_options o = { .plan = a->plan, .overrides = a->overrides, .n_overrides = a->n_overrides,
                          .backend = a->backend, .dump = a->dump, .no_gradcheck = a->no_gradcheck };
    return compile_plan(p, &o) == 0 ? EXIT_OK : EXIT_PLAN;
}

static int cmd_check(int argc, char **argv) {
    plan_args a;
    int rc = parse_plan_args(argc, argv, &a, 0);
    if (rc != EXIT_OK) return rc;
    Program p;
    rc = run_passes(&p, &a);
    if (rc == EXIT_OK && !a.dump) program_report(&p, stdout);
    program_free(&p);
    return rc;
}

static int cmd_compile(int argc, char **argv) {
    plan_args a;
    int rc = parse_plan_args(argc, argv, &a, 1);
    if (rc != EXIT_OK) return rc;
    Program p;
    rc = run_passes(&p, &a);
    if (rc == EXIT_OK) {
        if (pass_emit_backend(&p, a.out, a.runtime, a.backend) != 0) rc = EXIT_PLAN;
        else fprintf(stderr, "weft: wrote %s (%d stage program(s), %d ranks)\n", a.out, p.pp, p.world);
    }
    program_free(&p);
    return rc;
}

/* inspect and simulate: run the passes, then write a report to -o or stdout. */
typedef int (*report_fn)(const Program *p, const plan_args *a, FILE *out);

static int run_report(int argc, char **argv, report_fn report) {
    plan_args a;
    int rc = parse_plan_args(argc, argv, &a, 2);
    if (rc != EXIT_OK) return rc;
    Program p;
    rc = run_passes(&p, &a);
    if (rc == EXIT_OK && a.rank >= p.world) {
        fprintf(stderr, "weft: --rank %d: the plan has ranks 0..%d\n", a.rank, p.world - 1);
        rc = EXIT_USAGE;
    }
    if (rc == EXIT_OK && !a.out) {
        if (report(&p, &a, stdout) != 0) rc = EXIT_PLAN;
    } else if (rc == EXIT_OK) {
        /* -o FILE: a temporary sibling renamed over FILE once complete */
        wf_outfile out;
        char err[PATH_MAX + 200];
        if (wf_outfile_open(&out, a.out, 0666, err, sizeof err) != 0) {
            wf_error("%s", err);
            rc = EXIT_PLAN;
        } else if (report(&p, &a, out.f) != 0) {
            wf_outfile_abort(&out);
            rc = EXIT_PLAN;
        } else if (wf_outfile_commit(&out, err, sizeof err) != 0) {
            wf_error("%s", err);
            rc = EXIT_PLAN;
        }
    }
    program_free(&p);
    return rc;
}

static int inspect_report(const Program *p, const plan_args *a, FILE *out) {
    return inspect_plan(p, a->rank, a->format, out);
}

static int simulate_report(const Program *p, const plan_args *a, FILE *out) {
    sim_calibration cal = { 0 };
    if (a->calibration && simulate_load_calibration(a->calibration, &cal) != 0) return -1;
    if (cal.cuda && strcmp(a->backend, "cuda") != 0) {
        wf_error("%s was measured on GPUs (weft calibrate --backend cuda): simulate with --backend cuda",
                 a->calibration);
        return -1;
    }
    return simulate_plan(p, &cal, a->format, out);
}

static int cmd_calibrate(int argc, char **argv) {
    static const char use[] = "usage: weft calibrate [--backend cpu|cuda] [--gpus N] [--quick] [-o FILE]";
    const char *out = "cluster.lua", *backend = "cpu";
    int gpus = 1, quick = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
        else if (strcmp(argv[i], "--backend") == 0 && i + 1 < argc) backend = argv[++i];
        else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc) {
            char *end;
            long n = strtol(argv[++i], &end, 10);
            if (*end || n < 1 || n > 1024) return usage_error("--gpus needs a count from 1 to 1024");
            gpus = (int)n;
        } else if (strcmp(argv[i], "--quick") == 0) quick = 1;
        else return usage_error(use);
    }
    if (strcmp(backend, "cpu") != 0 && strcmp(backend, "cuda") != 0)
        return usage_error("calibrate --backend: cpu or cuda");
    if (strcmp(backend, "cpu") == 0 && (gpus != 1 || quick))
        return usage_error("--gpus and --quick are for --backend cuda");
    const char *runtime = getenv("WEFT_RUNTIME") ? getenv("WEFT_RUNTIME") : WEFT_RUNTIME_DIR;
    if (strcmp(backend, "cuda") == 0) return calibrate_cuda(runtime, gpus, quick, out) == 0 ? EXIT_OK : EXIT_PLAN;
    return calibrate_machine(runtime, out) == 0 ? EXIT_OK : EXIT_PLAN;
}

static int cmd_import_deepspeed(int argc, char **argv) {
    static const char use[] = "usage: weft import-deepspeed DS.json --model PLAN --world N -o OUT.lua";
    const char *json = NULL, *model = NULL, *out = NULL;
    long world = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc) model = argv[++i];
        else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) out = argv[++i];
        else if (strcmp(argv[i], "--world") == 0 && i + 1 < argc) {
            char *end;
            world = strtol(argv[++i], &end, 10);
            if (*end || world < 1) return usage_error("--world needs a rank count >= 1");
        } else if (argv[i][0] != '-' && !json) json = argv[i];
        else return usage_error(use);
    }
    if (!json || !model || !out || world < 1) return usage_error(use);
    char err[1024];
    if (import_deepspeed(json, model, (int)world, out, stderr, err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        return EXIT_PLAN;
    }
    fprintf(stderr, "weft: wrote %s\n", out);
    return EXIT_OK;
}

static int cmd_trace(int argc, char **argv) {
    if (argc != 3 || strcmp(argv[0], "compare") != 0)
        return usage_error("usage: weft trace compare PREDICTED.json MEASURED.json");
    trace pred = { 0 }, meas = { 0 };
    char err[512];
    int rc = EXIT_OK;
    if (trace_read_chrome(&pred, argv[1], err, sizeof err) != 0 ||
        trace_read_chrome(&meas, argv[2], err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        rc = EXIT_PLAN;
    } else if (trace_compare(&pred, &meas, stdout) != 0) {
        rc = EXIT_PLAN;
    }
    trace_free(&pred);
    trace_free(&meas);
    return rc;
}

static int parse_long(const char *s, long *v) {
    char *end;
    *v = strtol(s, &end, 10);
    return *s && !*end;
}

/* weft data vlm / vlm-synth (compiler/datagen_vlm.c). */
static int cmd_data_vlm(int argc, char **argv) {
    const char *mode = argv[0], *pos[2] = { NULL, NULL }, *out = NULL;
    long image = 0, patch = 0, seq = 0, vocab = 0, image_token = -1, pad_token = -1;
    long count = 1024, seed = 1;
    int n_pos = 0;
    for (int i = 1; i < argc; i++) {
        long *num = strcmp(argv[i], "--image") == 0 ? &image
                  : strcmp(argv[i], "--patch") == 0 ? &patch
                  : strcmp(argv[i], "--seq") == 0 ? &seq
                  : strcmp(argv[i], "--vocab") == 0 ? &vocab
                  : strcmp(argv[i], "--image-token") == 0 ? &image_token
                  : strcmp(argv[i], "--pad-token") == 0 ? &pad_token
                  : strcmp(argv[i], "--count") == 0 ? &count
                  : strcmp(argv[i], "--seed") == 0 ? &seed : NULL;
        if (strcmp(argv[i], "-o") == 0) {
            if (++i >= argc) return usage_error("-o needs a file");
            out = argv[i];
        } else if (num) {
            if (++i >= argc || !parse_long(argv[i], num) || *num < (num == &seed ? 0 : -1) ||
                *num > INT32_MAX)
                return usage_error("option needs a non-negative integer value");
        } else if (argv[i][0] != '-' && n_pos < 2) {
            pos[n_pos++] = argv[i];
        } else {
            return usage_error("unknown data vlm option");
        }
    }
    if (!out) return usage_error("data vlm needs -o OUT.bin");
    wf_vlm_opts o = { (int)image, (int)patch, (int)seq, (int)vocab, (int)image_token,
                      (int)pad_token };
    char err[PATH_MAX + 512];
    if (strcmp(mode, "vlm-synth") == 0) {
        if (n_pos) return usage_error("data vlm-synth takes no input files");
        if (wf_data_vlm_synth(out, count, (uint64_t)seed, &o, err, sizeof err) != 0) {
            fprintf(stderr, "weft: error: %s\n", err);
            return EXIT_PLAN;
        }
        double f_text, f_image;
        wf_vlm_synth_floors(&f_text, &f_image);
        printf("wrote %s: %ld synthetic image + caption records, seed %ld\n", out, count, seed);
        printf("entropy floor per descriptive token (colour, shape, position): "
               "%.6f nats without the image (ln %d + ln %d + ln %d over 3), "
               "%.6f nats with it\n", f_text, WF_SYNTH_COLOURS, WF_SYNTH_SHAPES,
               WF_SYNTH_POSITIONS, f_image);
        return EXIT_OK;
    }
    if (n_pos != 2) return usage_error("usage: weft data vlm IMAGES_DIR CAPTIONS.jsonl -o OUT.bin");
    long n;
    if (wf_data_vlm(pos[0], pos[1], out, &o, &n, stderr, err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: %s\n", err);
        return EXIT_PLAN;
    }
    printf("wrote %s: %ld image + caption records\n", out, n);
    return EXIT_OK;
}

static int cmd_data(int argc, char **argv) {
    if (argc < 1) return usage_error("data needs 'text', 'synth', 'vlm' or 'vlm-synth'");
    if (strcmp(argv[0], "vlm") == 0 || strcmp(argv[0], "vlm-synth") == 0)
        return cmd_data_vlm(argc, argv);
    const char *mode = argv[0], *in = NULL, *out = NULL;
    long tokens = 1000000, vocab = 256, branch = 4, seed = 1;
    for (int i = 1; i < argc; i++) {
        long *num = strcmp(argv[i], "--tokens") == 0 ? &tokens
                  : strcmp(argv[i], "--vocab") == 0 ? &vocab
                  : strcmp(argv[i], "--branch") == 0 ? &branch
                  : strcmp(argv[i], "--seed") == 0 ? &seed : NULL;
        if (strcmp(argv[i], "-o") == 0) {
            if (++i >= argc) return usage_error("-o needs a file");
            out = argv[i];
        } else if (num) {
            if (++i >= argc || !parse_long(argv[i], num))
                return usage_error("option needs an integer value");
        } else if (argv[i][0] != '-' && !in) {
            in = argv[i];
        } else {
            return usage_error("unknown data option");
        }
    }
    if (!out) return usage_error("data needs -o OUT.bin");
    char err[512];
    if (strcmp(mode, "text") == 0) {
        if (!in) return usage_error("data text needs an input FILE");
        long n;
        if (wf_data_text(in, out, &n, err, sizeof err) != 0) {
            fprintf(stderr, "weft: error: %s\n", err);
            return EXIT_PLAN;
        }
        printf("wrote %s: %ld byte-level tokens (vocab 256)\n", out, n);
    } else if (strcmp(mode, "synth") == 0) {
        double floor_nats;
        if (wf_data_synth(out, tokens, (int)vocab, (int)branch, (uint64_t)seed, &floor_nats,
                          err, sizeof err) != 0) {
            fprintf(stderr, "weft: error: %s\n", err);
            return EXIT_PLAN;
        }
        printf("wrote %s: %ld tokens, vocab %ld, %ld successors per token; "
               "entropy floor %.6f nats/token\n", out, tokens, vocab, branch, floor_nats);
    } else {
        return usage_error("data mode must be 'text' or 'synth'");
    }
    return EXIT_OK;
}

/* weft ckpt verify DIR: what a resume checks before it reads a tensor. */
static int ckpt_verify(const char *dir) {
    wf_ckpt_info info;
    char err[PATH_MAX + 1024];
    if (wf_ckpt_verify(dir, &info, err, sizeof err) != 0) {
        fprintf(stderr, "weft: error: checkpoint %s refused: %s\n", dir, err);
        return EXIT_PLAN;
    }
    printf("%s: step %ld, %ld samples seen, plan %s (%.12s), %s%s: verified\n", dir, info.step,
           info.samples_seen, info.plan, info.plan_hash, info.model,
           info.has_scaler ? ", fp16 loss scaler" : "");
    return EXIT_OK;
}

static int cmd_ckpt(int argc, char **argv) {
    static const char use[] =
        "usage: weft ckpt diff A B [--norm-tol REL [--from A0]] [--bound ABS] [--tol REL] [--atol ABS]\n"
        "                          [--noise PATTERN:LO:HI]...\n"
        "       weft ckpt verify DIR";
    if (argc == 2 && strcmp(argv[0], "verify") == 0) return ckpt_verify(argv[1]);
    if (argc < 3 || strcmp(argv[0], "diff") != 0) return usage_error(use);
    ckpt_tolerance t = { 0 };
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--from") == 0 && i + 1 < argc) {
            t.from = argv[++i];
            continue;
        }
        if (strcmp(argv[i], "--noise") == 0 && i + 1 < argc) {  /* PATTERN:LO:HI */
            char *spec = argv[++i], *hi = strrchr(spec, ':'), *lo = NULL, *end;
            if (hi) {
                *hi++ = 0;
                lo = strrchr(spec, ':');
            }
            if (!lo || t.n_noise == CKPT_MAX_NOISE) return usage_error(use);
            *lo++ = 0;
            ckpt_noise *z = &t.noise[t.n_noise++];
            z->pattern = spec;
            z->lo = strtol(lo, &end, 10);
            if (*end || !*lo) return usage_error(use);
            z->hi = strtol(hi, &end, 10);
            if (*end || !*hi || z->lo < 0 || z->hi < z->lo) return usage_error(use);
            continue;
        }
        double *v = strcmp(argv[i], "--tol") == 0        ? &t.tol
                    : strcmp(argv[i], "--atol") == 0     ? &t.atol
                    : strcmp(argv[i], "--bound") == 0    ? &t.bound
                    : strcmp(argv[i], "--norm-tol") == 0 ? &t.norm_tol
                                                         : NULL;
        char *end;
        if (!v || i + 1 >= argc) return usage_error(use);
        *v = strtod(argv[++i], &end);
        if (*end || *v < 0) return usage_error(use);
    }
    return ckpt_diff(argv[1], argv[2], &t, stdout) == 0 ? EXIT_OK : EXIT_PLAN;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        print_usage(stderr);
        return EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
        print_usage(stdout);
        return EXIT_OK;
    }
    if (strcmp(cmd, "--version") == 0) {
        printf("weft %s\n", WEFT_VERSION);
        return EXIT_OK;
    }
    if (strcmp(cmd, "check") == 0) return cmd_check(argc - 2, argv + 2);
    if (strcmp(cmd, "compile") == 0) return cmd_compile(argc - 2, argv + 2);
    if (strcmp(cmd, "inspect") == 0) return run_report(argc - 2, argv + 2, inspect_report);
    if (strcmp(cmd, "trace") == 0) return cmd_trace(argc - 2, argv + 2);
    if (strcmp(cmd, "import-deepspeed") == 0) return cmd_import_deepspeed(argc - 2, argv + 2);
    if (strcmp(cmd, "calibrate") == 0) return cmd_calibrate(argc - 2, argv + 2);
    if (strcmp(cmd, "simulate") == 0) return run_report(argc - 2, argv + 2, simulate_report);
    if (strcmp(cmd, "plan") == 0) return plan_search_main(argc - 2, argv + 2);
    if (strcmp(cmd, "data") == 0) return cmd_data(argc - 2, argv + 2);
    if (strcmp(cmd, "ckpt") == 0) return cmd_ckpt(argc - 2, argv + 2);
    fprintf(stderr, "weft: unknown command '%s'\n", cmd);
    return usage_error("unknown command");
}
