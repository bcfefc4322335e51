/* graph.c: a CUDA graph per training step.
 *
 * The first step this process runs is eager (warm-up: cuBLAS, NCCL and the
 * comm events set themselves up).  The second is captured: the host loads
 * the step's tokens first (wf_load_step), then the generated step runs with
 * c->graph_capture set, so that
 *   - microbatch loading is skipped (the tokens are in place already),
 *   - the cross-entropy sums token losses on the device (xent.cu), as it
 *     does in eager steps too (async.c), never handing a sum to the host,
 *   - wf_optimizer_step returns at once: the optimizer runs on the host
 *     after every replay, so the learning rate and anything else that
 *     changes per step is never baked into the graph;
 * the comm streams are joined back (coll->join) and the capture ends.  From
 * then on each step is: load tokens, launch the graph, run the optimizer
 * (which waits for the device and takes the loss from the device sum).
 *
 * One host value is baked into the graph: the loss scale the classifier
 * kernels multiply the loss gradient by (wf_loss_scale, a kernel argument).
 * It is fixed in bf16 and fp32; fp16's dynamic scale (loss_scale.c) halves
 * on an overflow and doubles after `window` clean steps.  So the step is
 * captured again whenever the scale differs from the captured one (logged).
 * Every rank changes it at the same step, since the overflow verdict is
 * OR-reduced over all ranks, so NCCL captures still match.  The rest of an
 * fp16 step that depends on the host (the 16-bit rounding of the reduced
 * gradients, the overflow check, the skip, the scale update) is in
 * wf_optimizer_step, which runs after the replay exactly as in eager steps.
 * Re-capturing, rather than reading the scale from device memory, keeps
 * the kernels' API: the scale changes every `window` (DeepSpeed: 1000)
 * steps or on a rare overflow, and a capture costs the host's launches of
 * one step plus cudaGraphInstantiate.
 *
 * Only where nothing in the step needs the host: otherwise every step runs
 * eagerly and the log says why. */
#include "cuda_rt.h"
#include "internal.h"

/* PipeDream-2BW: one graph per weight-version parity (the step's kernels
 * read the version of its batches, wf_2bw_use_micro: a pointer baked in);
 * captured at the second and third steps.  Its steps end with host work,
 * the tied wte's exchange and the optimizer: recorded while capturing and
 * run after each replay, in order (twobw.c).  The prologue and epilogue
 * (filling and draining the pipeline) stay eager. */
typedef struct {
    cudaGraphExec_t exec;
    float scale;  /* wf_loss_scale when it was captured */
} step_graph;

/* This file's part of a context's state (cuda_rt.h's wf_cuda_ctx). */
struct wf_cuda_graph {
    step_graph graphs[2];
    const char *off;      /* why steps run eagerly; NULL: graphs on */
    int steps_run;
};

static struct wf_cuda_graph *graph_of(wf_ctx *c) {
    wf_cuda_ctx *x = wf_cuda_of(c);
    if (!x->graph) x->graph = wf_cuda_zalloc(c, sizeof *x->graph, "graph.c's state");
    return x->graph;
}

static const char *why_eager(wf_ctx *c) {
    const wf_program *p = c->p;
    if (c->opt.no_graph) return "--no-graph";
    if (c->opt.profile) return "--profile (the device is waited for at every op class switch)";
    if (c->world > 1 && p->comm == WF_COMM_MPI) return "comm = mpi (host MPI inside the step)";
    if (c->opt.trace) return "--trace (host timestamps around every instruction)";
    /* the CUDA graph API restricts captured copies of managed memory there
     * (cudaGraphAddMemcpyNode), and the host writes tokens between replays */
    if (!wf_cuda_concurrent_managed(c)) return "the device has no concurrent managed access";
    return NULL;
}

/* 1 if the step is captured and instantiated.  A capture that CUDA
 * rejects at its end (invalidated by something the step did) leaves a
 * single-rank run eager, with the reason in the log, rather than losing the
 * run: nothing of the captured step ran, and the caller runs it eagerly.
 * With several ranks it stays fatal: their NCCL captures must match. */
static int capture(wf_ctx *c, step_graph *g, int again) {
    cudaStream_t s = wf_cuda_stream(c);
    cudaGraph_t graph = NULL;
    g->scale = wf_loss_scale(c);
    /* act16: the graph converts each weight at its first use in the step
     * (cast.c), whatever the steps before left in the 16-bit copies */
    wf_cuda_weight16_forget(c);
    c->graph_capture = 1;
    if (c->p->prologue) wf_2bw_capture_begin(c);
    WF_CUDA(c, cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    c->p->step(c);
    c->coll->join(c);  /* comm streams that joined the capture must rejoin it */
    cudaError_t e = cudaStreamEndCapture(s, &graph);
    c->graph_capture = 0;
    wf_cuda_weight16_forget(c);  /* the captured conversions have not run (and may never) */
    const char *call = "cudaStreamEndCapture";
    size_t nodes = 0;
    if (e == cudaSuccess) {
        WF_CUDA(c, cudaGraphGetNodes(graph, NULL, &nodes));
        call = "cudaGraphInstantiate";
        e = cudaGraphInstantiate(&g->exec, graph, 0);
        WF_CUDA(c, cudaGraphDestroy(graph));
    }
    if (e != cudaSuccess) {
        if (c->world > 1) wf_cuda_fail(c, call, WF_CUDA_WHERE, cudaGetErrorString(e));
        (void)cudaGetLastError();
        g->exec = NULL;
        graph_of(c)->off = "the capture failed";
        wf_log(c, "cuda graph: off: %s failed at step %ld (%s); every step runs eagerly\n", call,
               c->step + 1, cudaGetErrorString(e));
        return 0;
    }
    if (!again) wf_log(c, "cuda graph: on (captured step %ld, %zu nodes%s)\n", c->step + 1, nodes,
                       c->p->prologue ? "; 2BW: one graph per weight version" : "");
    else wf_log(c, "cuda graph: captured again at step %ld (the loss scale is now %g)\n", c->step + 1,
                c->scaler.scale);
    return 1;
}

/* At startup (async.c), so that every schedule's log says it, 2BW's too. */
void wf_cuda_graph_decide(wf_ctx *c) {
    struct wf_cuda_graph *s = graph_of(c);
    s->off = why_eager(c);
    if (s->off) wf_log(c, "cuda graph: off: %s\n", s->off);
    else wf_log(c, "cuda graph: the step is captured after a warm-up step\n");
}

void wf_backend_run_step(wf_ctx *c) {
    struct wf_cuda_graph *s = graph_of(c);
    if (s->off || s->steps_run++ == 0) {  /* eager, or the warm-up step */
        c->p->step(c);
        return;
    }
    /* the host writes the tokens while the previous step's optimizer kernels
     * may still run: they do not read them (wf_backend_host_write waits where
     * the device cannot share managed memory with running kernels); every
     * reader of the old tokens finished before that optimizer's host wait */
    wf_load_step(c);
    step_graph *g = &s->graphs[c->p->prologue ? c->step % 2 : 0];
    int again = g->exec && wf_loss_scale(c) != g->scale;  /* fp16's scale changed */
    if (again) {
        WF_CUDA(c, cudaGraphExecDestroy(g->exec));
        g->exec = NULL;
    }
    if (!g->exec && !capture(c, g, again)) {
        c->p->step(c);  /* loads the same tokens again */
        return;
    }
    WF_CUDA(c, cudaGraphLaunch(g->exec, wf_cuda_stream(c)));
    wf_cuda_weight16_forget(c);  /* the host kept no record of the replay's conversions */
    if (c->p->prologue) wf_2bw_run_tail(c);  /* the tied wte's exchange and the optimizer */
    else wf_optimizer_step(c);
}
