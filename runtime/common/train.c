/* train.c: wf_main, the training loop around the compiled step.
 *
 * Everything is allocated here once, before the first step; the loop itself
 * plans nothing and allocates nothing. */
#include <getopt.h>
#include <signal.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blas.h"
#include "internal.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

int wf_is_root(const wf_ctx *c) { return c->rank == 0; }

void wf_log(const wf_ctx *c, const char *fmt, ...) {
    if (!wf_is_root(c) || c->opt.quiet) return;
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
}

static const char HELP[] =
    "options:\n"
    "  --steps N        stop after step N (the LR schedule spans the plan's train.steps)\n"
    "  --data FILE      token file (.bin) instead of the plan's data.train\n"
    "  --save DIR       write a checkpoint folder at the end\n"
    "  --ckpt DIR       checkpoint folder for the plan's train.ckpt_every\n"
    "  --keep N         with --ckpt: DIR holds one step_N folder per checkpoint, the\n"
    "                   newest N kept (default: DIR is one checkpoint, replaced)\n"
    "  --async-save     periodic checkpoints: copy the state to host memory at the step\n"
    "                   boundary and write it from a background thread on each\n"
    "                   pipeline stage's writer rank (the log shows the time\n"
    "                   training was blocked)\n"
    "  --resume DIR     start from a checkpoint folder (model, optimizer, step)\n"
    "  --resume auto    the newest complete checkpoint in the --ckpt (else --save)\n"
    "                   folder, or step 0 when it holds none yet (for requeued jobs)\n"
    "  --metrics FILE   JSON lines with each step's loss, lr and grad norm\n"
    "  --trace FILE     Chrome trace of every schedule instruction on every rank\n"
    "  --quiet          no per-step log\n"
    "  --profile        time per op class per step (GEMM, attention, norm, elementwise,\n"
    "                   classifier, optimizer, communication wait, other) in the summary;\n"
    "                   CUDA: waits for the device at each switch, runs without graphs\n"
    "  --fault-timeout S\n"
    "                   a wait on other ranks longer than S seconds ends the job,\n"
    "                   naming the rank and instruction (default: the plan's\n"
    "                   fault.timeout_s)\n"
    "  --no-graph       CUDA: run every step eagerly instead of replaying a captured\n"
    "                   CUDA graph (the CPU backend has no graphs: accepted, no effect)\n"
    "  --inject-overflow STEP[:RANK]\n"
    "                   test hook (fp16 only): write an inf into world rank RANK's\n"
    "                   (default 0) gradient at step STEP (counted from 1), after the\n"
    "                   reductions; every rank must then skip that step (repeatable)\n"
    "signals: SIGTERM or SIGUSR1 (what Slurm sends before a time limit or a preemption;\n"
    "  mpirun forwards SIGUSR1) finish the step, save to --ckpt (else --save) and exit\n"
    "  with code 75; rerun with --resume auto to continue\n";

static void parse_options(wf_ctx *c, int argc, char **argv) {
    static const struct option longs[] = {
        { "steps", required_argument, 0, 's' }, { "data", required_argument, 0, 'd' },
        { "save", required_argument, 0, 'S' },  { "ckpt", required_argument, 0, 'c' },
        { "resume", required_argument, 0, 'r' }, { "metrics", required_argument, 0, 'm' },
        { "quiet", no_argument, 0, 'q' },       { "help", no_argument, 0, 'h' },
        { "trace", required_argument, 0, 't' }, { "inject-overflow", required_argument, 0, 'i' },
        { "no-graph", no_argument, 0, 'G' }, { "keep", required_argument, 0, 'k' },
        { "async-save", no_argument, 0, 'A' }, { "fault-timeout", required_argument, 0, 'T' },
        { "profile", no_argument, 0, 'P' },
        { 0, 0, 0, 0 },
    };
    c->opt.steps = c->p->steps;
    c->opt.data = c->p->data_train;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (ch) {
        case 's': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || v < 0 || v > 1000000000)
                wf_fatal(c, "options", WF_WHERE, "--steps wants an integer >= 0, got '%s'", optarg);
            c->opt.steps = (int)v;
            break;
        }
        case 'd': c->opt.data = optarg; break;
        case 'S': c->opt.save = optarg; break;
        case 'c': c->opt.ckpt = optarg; break;
        case 'k': {
            char *end;
            long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 1000000)
                wf_fatal(c, "options", WF_WHERE, "--keep wants an integer >= 1, got '%s'", optarg);
            c->opt.keep = (int)v;
            break;
        }
        case 'r': c->opt.resume = optarg; break;
        case 'm': c->opt.metrics = optarg; break;
        case 't': c->opt.trace = optarg; break;
        case 'q': c->opt.quiet = 1; break;
        case 'G': c->opt.no_graph = 1; break;
        case 'A': c->opt.async_save = 1; break;
        case 'P': c->opt.profile = 1; break;
        case 'T': {
            char *end;
            double v = strtod(optarg, &end);
            if (end == optarg || *end || !(v >= 0.1 && v <= 1e6))
                wf_fatal(c, "options", WF_WHERE, "--fault-timeout wants seconds in 0.1 .. 1e6, got '%s'", optarg);
            c->opt.fault_timeout = v;
            break;
        }
        case 'i': {
            char *end;
            long v = strtol(optarg, &end, 10), r = 0;
            if (*end == ':') r = strtol(end + 1, &end, 10);
            if (*end || v < 1 || r < 0 || r >= c->world)
                wf_fatal(c, "options", WF_WHERE, "--inject-overflow wants STEP[:RANK] with STEP >= 1 and "
                         "RANK in 0 .. %d, got '%s'", c->world - 1, optarg);
            if (c->p->precision != WF_FP16)
                wf_fatal(c, "options", WF_WHERE, "--inject-overflow needs a program compiled with "
                         "precision = \"fp16\" (only fp16 skips overflowing steps)");
            if (c->opt.n_inject == 8)
                wf_fatal(c, "options", WF_WHERE, "--inject-overflow given more than 8 times");
            c->opt.inject_step[c->opt.n_inject] = v;
            c->opt.inject_rank[c->opt.n_inject++] = (int)r;
            break;
        }
        case 'h':
            if (wf_is_root(c)) fputs(HELP, stdout);
            MPI_Finalize();
            exit(0);
        default:
            wf_fatal(c, "options", WF_WHERE, "unknown option (see --help)");
        }
    }
}

static void check_layout(wf_ctx *c) {
    const wf_program *p = c->p;
    if (c->world != p->world)
        wf_fatal(c, "check_layout", WF_WHERE,
                 "this program was compiled for %d ranks (dp %d x tp %d x pp %d) but runs on %d; "
                 "use its launch.sh", p->world, p->dp, p->tp, p->pp, c->world);
}

static void allocate(wf_ctx *c) {
    const wf_program *p = c->p;
    size_t np = (size_t)p->param_numel * sizeof(float);
    long N = (long)p->micro * p->seq;
    /* ZeRO-3 keeps only the gather buffers of the parameters in use here (the
     * shards are allocated by wf_zero_setup); ZeRO-2 only the bucket buffers */
    if (p->param16) wf_params16_alloc(c);  /* 16-bit (ZeRO-3: the gather buffers), and the widening scratch */
    else if (p->zero >= 3) c->params = wf_alloc(c, (size_t)p->gather_numel * sizeof(float), "parameter gather buffers");
    else c->params = wf_alloc(c, np, "parameters");
    size_t gb = p->grad16 ? sizeof(uint16_t) : sizeof(float);  /* grad16.c: 16-bit gradients */
    if (p->zero >= 2) c->grads = wf_alloc(c, (size_t)p->grad_numel * gb, "gradient bucket buffers");
    else c->grads = wf_alloc(c, (size_t)(p->grad_numel ? p->grad_numel : 1) * gb, "gradients");
    if (p->grad16) wf_grad16_alloc(c);  /* the widening scratch and the sums' staging */
    wf_zero_setup(c);
    wf_opt_ranges_setup(c);
    size_t nm = (size_t)(c->moment_numel ? c->moment_numel : 1) * sizeof(float);
    /* offload: the moments live in host memory and AdamW runs on the host
     * (the CUDA backend pins them and runs its AdamW hook on the host; on
     * the CPU backend host and device memory are one) */
    if (p->offload_optimizer) {
        c->adam_m = wf_alloc_host_arena(c, nm, "AdamW first moment (host)");
        c->adam_v = wf_alloc_host_arena(c, nm, "AdamW second moment (host)");
    } else {
        c->adam_m = wf_alloc(c, nm, "AdamW first moment");
        c->adam_v = wf_alloc(c, nm, "AdamW second moment");
    }
    int slots = p->slots > 0 ? p->slots : 1;
    c->acts = wf_alloc(c, ((size_t)p->act_numel * (size_t)slots + (size_t)p->act_region_numel) * sizeof(float),
                       "activations");
    int sets = p->dact_sets > 0 ? p->dact_sets : 1;
    c->dacts = wf_alloc(c, (size_t)p->dact_numel * (size_t)sets * sizeof(float), "activation gradients");
    /* (ZeRO-3: the second version is a second shard, wf_zero_setup) */
    if (p->weight_delay && !p->param16 && p->zero < 3) c->next_params = wf_alloc(c, np, "PipeDream-2BW weight version");
    c->scratch = wf_alloc(c, (size_t)p->scratch_numel * sizeof(float), "scratch");
    if (p->stage16_numel > 0)  /* act16 on the CPU (cpu/stage16.h) */
        c->stage16 = wf_alloc(c, (size_t)p->stage16_numel * sizeof(float), "16-bit activation staging");
    c->losses = wf_alloc(c, (size_t)N * sizeof(float), "losses");
    c->comm = wf_alloc(c, (size_t)p->comm_numel * sizeof(float), "tensor-parallel staging");
    if (p->dp16_numel) c->dp16 = wf_alloc(c, (size_t)p->dp16_numel * sizeof(float), "16-bit gradient staging");
    c->recv = wf_alloc(c, (size_t)p->recv_buffers * (size_t)p->recv_numel * sizeof(float),
                       "pipeline receive buffers");
    size_t batches = p->prologue ? 2 : 1;  /* 2BW without flush: two batches in flight */
    c->tokens = wf_alloc(c, (size_t)N * (size_t)p->accum * batches * sizeof(int32_t), "tokens");
    c->targets = wf_alloc(c, (size_t)N * (size_t)p->accum * batches * sizeof(int32_t), "targets");
    if (p->image_positions > 0) {  /* a VLM's images and loss masks of every microbatch (batch_vlm.c) */
        c->images = wf_alloc(c, (size_t)p->image_h * p->image_w * p->image_c * (size_t)p->micro * p->accum * batches,
                             "images");
        c->loss_mask = wf_alloc(c, (size_t)N * (size_t)p->accum * batches, "loss mask");
    }
    c->bucket_req = wf_alloc(c, (size_t)p->n_buckets * sizeof(wf_req), "bucket requests");
    wf_req_init(c->bucket_req, p->n_buckets);
    /* d(global mean loss)/d(one token's loss): each rank's gradients are
     * summed over dp ranks and microbatches, so no division afterwards. */
    c->loss_scale = (float)(1.0 / ((double)N * p->accum * p->dp));
    wf_scaler_init(c);
}

/* fp16: the scale the step ran with, whether it was skipped (its gradient
 * norm then is null in the metrics: it overflowed) and the skipped total. */
/* One step's --metrics line and, every log_every steps, its log line.  fp16
 * adds the loss scale and the skipped steps (a skipped step's norm is null). */
static void write_step(wf_ctx *c, long step, double loss, double lr, double norm, double ms) {
    const wf_program *p = c->p;
    const wf_scaler *s = &c->scaler;
    int fp16 = p->precision == WF_FP16, skipped = fp16 && s->overflow;
    wf_step_metrics m = wf_step_metrics_of(c, ms);
    if (c->metrics && wf_is_root(c)) {
        char norm_text[32], scale[160] = "", tail[320];
        if (skipped) snprintf(norm_text, sizeof norm_text, "null");
        else snprintf(norm_text, sizeof norm_text, "%.9g", norm);
        if (fp16)
            snprintf(scale, sizeof scale, ", \"loss_scale\": %.17g, \"skipped\": %s, \"skipped_total\": %ld",
                     s->used, s->overflow ? "true" : "false", s->skipped);
        wf_metrics_tail(c, ms, tail, sizeof tail);
        if (c->vlm) {  /* a VLM: the loss on the words the image determines */
            size_t k = strlen(scale);
            snprintf(scale + k, sizeof scale - k, ", \"loss_descriptive\": %.9g", c->last_desc_loss);
        }
        fprintf(c->metrics, "{\"step\": %ld, \"loss\": %.9g, \"lr\": %.9g, \"grad_norm\": %s, "
                "\"ms\": %.3f%s%s}\n", step, loss, lr, norm_text, ms, scale, tail);
        fflush(c->metrics);
    }
    if (step % p->log_every == 0 || step == c->opt.steps || skipped) {
        char scale[128] = "";
        if (fp16)
            snprintf(scale, sizeof scale, " | scale %g%s | skipped %ld", s->used,
                     s->overflow ? " (overflow: step skipped)" : "", s->skipped);
        if (c->vlm) snprintf(scale, sizeof scale, " | descriptive %.4f", c->last_desc_loss);
        wf_log(c, "step %5ld/%d | loss %.4f | lr %.2e | grad norm %.3f%s | %7.1f ms | %8.0f tok/s"
               " | MFU %.2f%%\n", step, c->opt.steps, loss, lr, norm, scale, ms, m.tokens_per_s,
               100.0 * m.mfu);
    }
}

static void log_step(wf_ctx *c, double ms) {
    if (c->p->prologue) return;  /* 2BW without flush: log_ready */
    write_step(c, c->step, c->last_loss, c->last_lr, c->last_norm, ms);
}

/* PipeDream-2BW without flush: the metrics reduced since the last call, each
 * with the wall time of the call that ran its OPTIM. */
static void log_ready(wf_ctx *c, double *first_loss) {
    for (int i = 0; i < c->n_ready; i++) {
        long step = c->ready[i].step;
        if (isnan(*first_loss)) *first_loss = c->ready[i].loss;
        c->last_loss = c->ready[i].loss;
        c->last_norm = c->ready[i].norm;
        c->last_desc_loss = c->ready[i].desc;
        write_step(c, step, c->ready[i].loss, c->ready[i].lr, c->ready[i].norm, c->step_ms[(step - 1) % 2]);
    }
    c->n_ready = 0;
}

/* The 2BW loop: the prologue fills the pipeline, steady steps keep it full,
 * and the epilogue drains it before each checkpoint and at the end. */
static int train_2bw(wf_ctx *c, double *first_loss, int *stop) {
    const wf_program *p = c->p;
    int steps_run = 0, drained = 1;
    while (c->step < c->opt.steps) {
        /* a preemption drains the pipeline in this step, like a checkpoint */
        *stop = wf_preempt_poll(c);
        int ckpt = c->opt.ckpt && p->ckpt_every > 0 && (c->step + 1) % p->ckpt_every == 0;
        int last = c->step + 1 == c->opt.steps || ckpt || *stop;
        double t0 = now_s();
        if (drained) p->prologue(c);
        if (last) {
            p->epilogue(c);
            wf_2bw_finish(c);
        } else {
            wf_backend_run_step(c);  /* finishes batch step, starts the next; step++ */
        }
        drained = last;
        c->step_ms[(c->step - 1) % 2] = (now_s() - t0) * 1000.0;
        steps_run++;
        log_ready(c, first_loss);
        if (ckpt) wf_ckpt_save_periodic(c);
        if (*stop) break;
    }
    return steps_run;
}

static void summary(wf_ctx *c, int steps_run, double seconds, double first_loss) {
    const wf_program *p = c->p;
    double gemm_s, gemm_flops;
    wf_gemm_stats(&gemm_s, &gemm_flops);
    double tokens = (double)steps_run * p->global_batch * p->seq;
    double model_flops = p->flops_per_token * tokens;
    double ms = steps_run ? 1000.0 * seconds / steps_run : 0;
    wf_log(c, "done: %d steps in %.2f s (%.1f ms/step), loss %.4f -> %.4f; MFU %.2f%% of %d x %g "
              "TFLOP/s\n", steps_run, seconds, ms, first_loss, c->last_loss,
           100.0 * wf_step_metrics_of(c, ms).mfu, c->world, p->peak_tflops);
    wf_log(c, "throughput: %.0f tokens/s; model FLOPs %.2f GFLOP/s over %d rank(s) "
              "(%.2f GFLOP/s per rank); rank 0 GEMM: %.0f%% of step time at %.1f GFLOP/s\n",
           seconds > 0 ? tokens / seconds : 0, seconds > 0 ? model_flops / seconds / 1e9 : 0,
           c->world, seconds > 0 ? model_flops / seconds / 1e9 / c->world : 0,
           seconds > 0 ? 100.0 * gemm_s / seconds : 0, gemm_s > 0 ? gemm_flops / gemm_s / 1e9 : 0);
    wf_memory_summary(c);
}

/* Replicas must hold the same weights; a mismatch means a broken reduction. */
static void check_replicas(wf_ctx *c) {
    if (c->p->dp == 1 || c->p->zero >= 3) return;  /* ZeRO-3: no replicas, only shards */
    wf_backend_sync(c);
    uint64_t d = wf_params_digest(c), lo = d, hi = d;
    WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &lo, 1, MPI_UINT64_T, MPI_MIN, c->group_comm[WF_GROUP_DP]));
    WF_MPI(c, MPI_Allreduce(MPI_IN_PLACE, &hi, 1, MPI_UINT64_T, MPI_MAX, c->group_comm[WF_GROUP_DP]));
    if (lo != hi)
        wf_fatal(c, "check_replicas", WF_WHERE,
                 "data-parallel replicas hold different weights after step %ld", c->step);
}

/* Whether the command line asks for --async-save, read before MPI_Init
 * (parse_options runs after it): getopt_long takes any prefix of a long
 * option that names one option, and "--a" names only async-save. */
static int async_save_asked(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) break;
        size_t n = strlen(argv[i]);
        if (n >= 3 && strncmp(argv[i], "--async-save", n) == 0) return 1;
    }
    return 0;
}

/* The thread level asked of MPI: MPI_THREAD_MULTIPLE for --async-save's
 * writers (ckpt.c checks what was provided), else MPI_THREAD_FUNNELED (one
 * thread calls MPI, which spares Open MPI's locks on every message).  For
 * tests, WEFT_THREAD_LEVEL=funneled or serialized asks for no more than
 * that, so that --async-save's fallback for an MPI without
 * MPI_THREAD_MULTIPLE runs where MPI has it.  -1: a value it does not know. */
static int thread_level(int argc, char **argv) {
    int level = async_save_asked(argc, argv) ? MPI_THREAD_MULTIPLE : MPI_THREAD_FUNNELED;
    const char *env = getenv("WEFT_THREAD_LEVEL");
    if (!env || !*env) return level;
    int most;
    if (strcmp(env, "funneled") == 0) most = MPI_THREAD_FUNNELED;
    else if (strcmp(env, "serialized") == 0) most = MPI_THREAD_SERIALIZED;
    else if (strcmp(env, "multiple") == 0) most = MPI_THREAD_MULTIPLE;
    else return -1;
    return level < most ? level : most;
}

int wf_main(int argc, char **argv, const wf_program *p) {
    wf_blas_select(argc, argv);  /* may re-exec this program with a better BLAS kernel */
    static wf_ctx ctx;
    wf_ctx *c = &ctx;
    c->p = p;
    c->rank = -1;
    int provided, level = thread_level(argc, argv);
    if (level < 0) {  /* before MPI: every rank says it */
        fprintf(stderr, "weft: WEFT_THREAD_LEVEL wants funneled, serialized or multiple, got '%s'\n",
                getenv("WEFT_THREAD_LEVEL"));
        return 1;
    }
    if (MPI_Init_thread(&argc, &argv, level, &provided) != MPI_SUCCESS) {
        fprintf(stderr, "weft: MPI_Init_thread failed\n");
        return 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    WF_MPI(c, MPI_Comm_rank(MPI_COMM_WORLD, &c->rank));
    WF_MPI(c, MPI_Comm_size(MPI_COMM_WORLD, &c->world));
    parse_options(c, argc, argv);
    check_layout(c);
    /* a folder a save would refuse is refused now, before any training */
    if (c->opt.save) wf_ckpt_check_target(c, c->opt.save, 0);
    if (c->opt.ckpt) wf_ckpt_check_target(c, c->opt.ckpt, c->opt.keep > 0);
    if (c->opt.keep && !c->opt.ckpt)
        wf_fatal(c, "options", WF_WHERE, "--keep needs --ckpt DIR (the folder it keeps checkpoints in)");
    /* the groups of the mesh (groups.c), from the program's axes */
    wf_groups_split(c);
    wf_blas_threads(c);
    /* a wait on other ranks longer than this ends the job (watchdog.c) */
    wf_watch_start(c, c->opt.fault_timeout > 0 ? c->opt.fault_timeout
                      : p->fault_timeout_s > 0 ? p->fault_timeout_s : 300.0);
    wf_backend_setup(c);  /* the collectives: MPI, or NCCL communicators on the same groups */
    wf_preempt_setup(c);

    char blas[512];
    wf_blas_describe(blas, sizeof blas);
    wf_log(c, "weft %s | plan %s (%s) | %d rank(s): dp %d x tp %d x pp %d\n", WF_VERSION,
           p->plan, p->plan_hash, c->world, p->dp, p->tp, p->pp);
    wf_log(c, "%s\n", blas);
    if (p->precision != WF_FP32)
        wf_log(c, "precision: %s storage (%s; weights %s, weight gradients %s), fp32 master weights and AdamW "
               "moments%s%s\n", p->precision == WF_BF16 ? "bf16" : "fp16",
               p->act16 ? "activations and their gradients in 16 bits" : "activations emulated: rounded fp32",
               p->param16 ? "in 16 bits" : "as rounded fp32", p->grad16 ? "in 16 bits" : p->grad_accum32 ? "in fp32" : "as rounded fp32",
               p->grad_accum32 ? ", weight gradients accumulated in fp32" : "",
               p->precision == WF_FP16 ? (p->scale_dynamic ? ", dynamic loss scale" : ", static loss scale") : "");
    if (p->zero || p->offload_optimizer)
        wf_log(c, "optimizer: AdamW state %s%s%s%s%s\n", p->zero ? "sharded over the dp group" : "whole",
               p->zero >= 2 ? ", gradients sharded" : "", p->zero >= 3 ? ", parameters sharded" : "",
               p->offload_optimizer ? ", in host memory (offload)" : "",
               p->offload_params ? ", parameter shard in host memory (offload)" : "");

    /* the arenas training keeps (metrics.c); startup buffers (16-bit
     * parameters' floats, checkpoint reading) are not counted */
    size_t before = wf_alloc_total();
    allocate(c);
    c->arena_bytes = (double)(wf_alloc_total() - before);
    if (c->opt.resume && strcmp(c->opt.resume, "auto") == 0) c->opt.resume = wf_resume_auto(c);
    char err[512];
    if (p->image_positions > 0) wf_vlm_batch_setup(c);  /* a VLM: a WVLM file */
    else if (wf_data_open(&c->data, c->opt.data, p->vocab, p->seq, err, sizeof err) != 0)
        wf_fatal(c, "wf_data_open", WF_WHERE, "%s", err);
    if (c->opt.metrics && wf_is_root(c)) {
        c->metrics = fopen(c->opt.metrics, c->opt.resume ? "a" : "w");
        if (!c->metrics) wf_fatal(c, "fopen", WF_WHERE, "cannot write metrics file %s", c->opt.metrics);
    }
    if (p->zero >= 3) {  /* each rank makes or reads its own ranges alone (zero_startup.c) */
        before = wf_alloc_total();
        wf_master_alloc(c);  /* bf16 / fp16: filled as the shards are */
        c->arena_bytes += (double)(wf_alloc_total() - before);
        if (c->opt.resume) wf_ckpt_load(c, c->opt.resume);
        else wf_zero3_init(c);
    } else {
        if (p->param16) wf_params16_startup(c);  /* floats until rounded, then 16-bit */
        if (c->opt.resume) wf_ckpt_load(c, c->opt.resume);
        else wf_init_params(c);
        before = wf_alloc_total();
        wf_master_setup(c);  /* bf16 / fp16: fp32 masters, 16-bit working weights */
        c->arena_bytes += (double)(wf_alloc_total() - before);
        if (p->param16) wf_params16_adopt(c);  /* (2BW: both versions from the loaded or initial floats) */
        else if (p->weight_delay && !c->opt.resume)  /* a checkpoint holds both versions */
            memcpy(c->next_params, c->params, sizeof(float) * (size_t)p->param_numel);
    }
    wf_startup_report(c);  /* the host memory that took, beside weft check's bound (startup_peak.h) */
    wf_params_changed(c);
    before = wf_alloc_total();
    if (p->prologue) wf_2bw_setup(c);
    c->arena_bytes += (double)(wf_alloc_total() - before);
    wf_memory_report(c);
    wf_log(c, "model %d layers, hidden %d, %d heads, seq %d, vocab %d | global batch %d "
              "(%d x %d ranks x %d accumulation) | data %s (%ld tokens)\n",
           p->layers, p->hidden, p->heads, p->seq, p->vocab, p->global_batch, p->micro, p->dp,
           p->accum, c->opt.data, wf_data_tokens(c->data));

    WF_MPI(c, MPI_Barrier(MPI_COMM_WORLD));
    wf_gemm_stats_reset();
    wf_prof_start(c->opt.profile);
    wf_trace_begin(c);
    double t_start = now_s(), first_loss = NAN;
    int steps_run = 0, stop = 0;  /* stop: the signal every rank stops for (preempt.c) */
    long saved = -1;              /* the step the last periodic checkpoint holds */
    if (p->prologue) {  /* 2BW without flush: compared once drained (its stages never meet earlier) */
        steps_run = train_2bw(c, &first_loss, &stop);
        wf_device_memory_report(c);
    }
    while (!stop && c->step < c->opt.steps) {
        double t0 = now_s();
        wf_backend_run_step(c);  /* microbatches, bucket all-reduces, optimizer; step++ */
        wf_prof(c, WF_PROF_OTHER);
        double ms = (now_s() - t0) * 1000.0;
        wf_device_memory_report(c);  /* once, every rank: the first step allocated what it needs */
        if (steps_run++ == 0) first_loss = c->last_loss;
        log_step(c, ms);
        if (c->opt.ckpt && p->ckpt_every > 0 && c->step % p->ckpt_every == 0) {
            wf_ckpt_save_periodic(c);
            saved = c->step;
        }
        stop = wf_preempt_poll(c);
    }
    wf_preempt_end(c);
    double seconds = now_s() - t_start;
    wf_prof_stop(c);
    wf_trace_write(c);
    check_replicas(c);
    summary(c, steps_run, seconds, first_loss);
    wf_prof_summary(c, steps_run);
    if (stop && c->step < c->opt.steps) {  /* preempted: save where a requeued run looks */
        const char *dir = c->opt.ckpt ? c->opt.ckpt : c->opt.save;
        if (dir && !(dir == c->opt.ckpt && saved == c->step)) {
            if (dir == c->opt.ckpt) wf_ckpt_save_periodic(c);  /* honours --keep */
            else wf_ckpt_save(c, dir);
        }
        wf_ckpt_wait(c);  /* an --async-save write must be on disk before the exit */
        if (wf_is_root(c))  /* even with --quiet: the requeued job's log says why */
            fprintf(stderr, "weft: preempted: signal %d (%s) at step %ld of %d; %s%s; exit %d: rerun with "
                    "--resume auto\n", stop, stop == SIGTERM ? "SIGTERM" : stop == SIGUSR1 ? "SIGUSR1" : "?",
                    c->step, c->opt.steps, dir ? "checkpoint in " : "no --ckpt or --save folder: nothing saved",
                    dir ? dir : "", WF_EXIT_PREEMPTED);
        if (c->metrics) fclose(c->metrics);
        wf_data_close(c->data);
    wf_vlm_batch_close(c);
        MPI_Finalize();
        return WF_EXIT_PREEMPTED;
    }
    if (c->opt.save) wf_ckpt_save(c, c->opt.save);
    wf_ckpt_wait(c);
    if (c->metrics) fclose(c->metrics);
    wf_data_close(c->data);
    wf_vlm_batch_close(c);
    MPI_Finalize();
    return 0;
}
