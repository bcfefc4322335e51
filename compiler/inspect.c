/* inspect.c: `weft inspect PLAN`: every rank's program as the compiler fixed
 * it (its instruction stream with message sizes, bucket all-reduces and the
 * optimizer), a text Gantt per stage, and the same timeline as Chrome trace
 * JSON or SVG.  Durations come from model FLOPs at the cluster device's fp32
 * peak and boundary bytes at a nominal link rate: a picture of the schedule,
 * not a prediction (that is `weft simulate`). */
#include <stdlib.h>
#include <string.h>

#include "ckpt_shards.h"
#include "inspect.h"
#include "ops.h"
#include "trace.h"

enum { LINK_GBS = 25 };  /* nominal point-to-point bandwidth for the picture */

/* Forward FLOPs of one microbatch on chunk k (2 per multiply-add). */
static double chunk_flops(const Program *p, int k) {
    double tokens = (double)p->micro * p->seq, f = 0;
    for (int i = p->chunk_first_op[k]; i < p->chunk_end_op[k]; i++) {
        const op_row *r = op_row_of(p->ops[i].kind);
        if (r->flops) f += tokens * r->flops(p, &p->ops[i]);  /* the matmuls; the rest is memory-bound */
    }
    return f;
}

static long boundary_bytes(const Program *p) { return pipe_message_bytes(p); }  /* act16: half */

/* A single-stage program is a one-stage schedule of microbatches. */
static const schedule *the_schedule(const Program *p, schedule *own) {
    if (p->sched) return p->sched;
    char err[256];
    if (schedule_build(own, SCHED_1F1B, 1, p->accum, 1, err, sizeof err) != 0) return NULL;
    return own;
}

/* The tensor-parallel collectives inside one forward or backward of chunk k,
 * each with its dtype and the bytes of the whole tensor it moves (wire.c):
 * "2 all-reduce bf16 256 KiB, 1 all-gather bf16 64 KiB" over the tp group. */
static void tp_collectives(const Program *p, int k, int backward, char *buf, size_t n) {
    static const char *const names[] = { "all-reduce", "all-gather", "reduce-scatter" };
    int count[3] = { 0, 0, 0 };
    long bytes[3] = { 0, 0, 0 };
    for (int i = p->chunk_first_op[k]; i < p->chunk_end_op[k]; i++) {
        const op_row *r = op_row_of(p->ops[i].kind);
        op_coll coll = backward ? r->coll_bwd : r->coll_fwd;
        if (coll == COLL_NONE) continue;
        int which = coll == COLL_ALLREDUCE ? 0 : coll == COLL_ALLGATHER ? 1 : 2;
        count[which]++;
        bytes[which] += tp_op_bytes(p, i, backward);
    }
    size_t used = 0;
    buf[0] = 0;
    for (int j = 0; j < 3; j++)
        if (count[j] && used < n)
            used += (size_t)snprintf(buf + used, n - used, "%s%d %s %s %.0f KiB", used ? ", " : "", count[j],
                                     names[j], j == 1 ? tp_gather_dtype(p) : tp_sum_dtype(p),
                                     bytes[j] / 1024.0);
    /* the vocabulary-parallel loss: row maxima (fp32), sums and target logits (fp64) */
    for (int i = p->chunk_first_op[k]; i < p->chunk_end_op[k] && !backward && used < n; i++)
        if (op_row_of(p->ops[i].kind)->loss)
            used += (size_t)snprintf(buf + used, n - used, "%sloss all-reduces fp32 %.1f KiB + fp64 %.1f KiB",
                                     used ? ", " : "", 4.0 * p->micro * p->seq / 1024.0,
                                     16.0 * p->micro * p->seq / 1024.0);
}

/* The rank at (stage, dp 0, tp 0): stage's checkpoint writer (runtime/common/ckpt.c). */
static int writer_of(const Program *p, int stage) {
    int coord[WF_AXES] = { 0 };
    coord[WF_AXIS_PP] = stage;
    return wf_mesh_rank(p->axes, p->n_axes, coord);
}

/* What rank r does in a checkpoint save, after its last instruction of the
 * step: the figures are report_ckpt.c's, as `weft check` states them. */
static void print_ckpt(const Program *p, int r, int stage, int dp, int tp, int last, FILE *out) {
    char a[32], b[32], c[32], d[32], e[32];
    if (p->ckpt_every > 0)
        fprintf(out, "  checkpoint after #%d, every %d steps (--ckpt DIR) and at the end (--save DIR):\n", last,
                p->ckpt_every);
    else
        fprintf(out, "  checkpoint after #%d, at the end (--save DIR):\n", last);
    if (dp == 0 && tp == 0) {
        ckpt_stage k = ckpt_stage_of(p, stage);
        char model[48], optim[48];
        if (p->pp > 1) {  /* its stage's shard of a Hugging Face sharded checkpoint */
            wf_ckpt_shard_name(model, sizeof model, "model", stage, p->pp);
            wf_ckpt_shard_name(optim, sizeof optim, "optimizer", stage, p->pp);
        } else {
            snprintf(model, sizeof model, "model.safetensors");
            snprintf(optim, sizeof optim, "optimizer.safetensors");
        }
        program_human_bytes(k.held, a, sizeof a);
        program_human_bytes(k.peak, b, sizeof b);
        program_human_bytes(k.model_file, c, sizeof c);
        program_human_bytes(k.optim_file, d, sizeof d);
        program_human_bytes(k.sync, e, sizeof e);
        fprintf(out, "    writer of stage %d%s: --async-save copies its own pieces, %s, to host memory (peak %s), and a thread\n"
                     "    writes %s (%s) and %s (%s) while training goes on\n"
                     "    (without --async-save: written tensor by tensor before the next step, peak %s)\n",
                stage, p->tp > 1 ? ", gathering its tp group's shards" : "", a, b, model, c, optim, d, e);
        if (r == 0 && p->pp > 1) {
            fprintf(out, "    then waits for every stage's shards, writes model.safetensors.index.json and\n"
                         "    optimizer.safetensors.index.json, config.json and manifest.json, renames the folder in\n");
        } else if (r == 0) {
            fprintf(out, "    then writes config.json and manifest.json, renames the folder in\n");
        }
    } else {
        /* --async-save: every rank copies its own pieces first (at most dp 0's, held) */
        program_human_bytes(ckpt_stage_of(p, stage).held, a, sizeof a);
        if (dp == 0)
            fprintf(out, "    sends its tp shard of each tensor to rank %d (stage %d's writer)", writer_of(p, stage), stage);
        else
            fprintf(out, "    writes nothing (dp 0 holds the same weights)%s",
                    p->zero ? "; sends its ZeRO pieces of each tensor to dp 0" : "");
        fprintf(out, "; --async-save: from its own pieces, copied to host memory (at most %s), by a thread\n", a);
    }
}

/* Backward op j as the op it runs backward: "linear lm_head.weight" (forward
 * op n_ops - 1 - j, named by its first parameter where it has one). */
static void backward_op_name(const Program *p, int j, char *buf, size_t n) {
    const ir_op *o = &p->ops[p->n_ops - 1 - j];
    if (o->n_param > 0) snprintf(buf, n, "%s %s", op_name(o->kind), p->params[o->param[0]].name);
    else snprintf(buf, n, "%s", op_name(o->kind));
}

/* Where bucket b's reduction starts and is waited (emit_step.c's
 * emit_bucket_calls): after the backward op that completes it, in the
 * step's last microbatch (ZeRO >= 2: every microbatch, waited after the op
 * zero_plan.c placed); under a split backward (zero-bubble) in B for a
 * bucket B writes whole (buckets.c's start_in_b), else in W. */
static void print_bucket_timing(const Program *p, int b, FILE *out) {
    const ir_bucket *bk = &p->buckets[b];
    int split = p->pp > 1 && p->sched && p->sched->split_backward;
    const char *half = !split ? "" : bk->start_in_b ? " in B" : " in W";
    char done[160], wait[160];
    backward_op_name(p, bk->ready_after_op, done, sizeof done);
    if (p->zero >= 2) {
        backward_op_name(p, bk->wait_after_op, wait, sizeof wait);
        fprintf(out, "  bucket %d: started%s after backward op %d (%s) every microbatch, waited%s after backward op %d (%s)\n",
                b, half, bk->ready_after_op, done, half, bk->wait_after_op, wait);
    } else {
        fprintf(out, "  bucket %d: started%s after backward op %d (%s) in the last microbatch, waited before the optimizer step\n",
                b, half, bk->ready_after_op, done);
    }
}

static void print_streams(const Program *p, const schedule *s, int only_rank, FILE *out) {
    char buf[200];
    long bytes = boundary_bytes(p);
    for (int r = 0; r < p->world; r++) {
        if (only_rank >= 0 && r != only_rank) continue;
        int coord[WF_AXES];
        wf_mesh_coords(p->axes, p->n_axes, r, coord);
        int tp = coord[WF_AXIS_TP], dp = coord[WF_AXIS_DP], stage = coord[WF_AXIS_PP];
        fprintf(out, "rank %d: stage %d, dp %d, tp %d; %d activation slot(s)", r, stage, dp, tp,
                s->slots[stage]);
        if (p->pp > 1) {  /* the schedule names stages; these are the ranks behind them */
            fprintf(out, "; pipeline peers:");
            for (int st = 0; st < p->pp; st++)
                if (st != stage) {
                    coord[WF_AXIS_PP] = st;  /* the same (dp, tp) on stage st, by mesh.order */
                    fprintf(out, " stage %d = rank %d", st, wf_mesh_rank(p->axes, p->n_axes, coord));
                }
        }
        fputc('\n', out);
        if (s->pro)
            fprintf(out, "  steady step, no flush: finishes batch 1 (m %d..%d), starts batch 2 (prologue "
                    "and epilogue: --dump=schedule)\n", s->micro, 2 * s->micro - 1);
        for (int i = 0; i < s->n[stage]; i++) {
            const sched_instr *in = &s->ins[stage][i];
            char text[200];
            sched_instr_str(in, text, sizeof text);
            /* the schedule's peers are stages */
            size_t k = 0;
            for (const char *t = text; *t && k + 8 < sizeof buf; t++) {
                if (strncmp(t, "rank ", 5) == 0) {
                    memcpy(buf + k, "stage ", 6);
                    k += 6;
                    t += 4;
                } else {
                    buf[k++] = *t;
                }
            }
            buf[k] = 0;
            int msg = in->op >= SI_SEND_ACT && in->op <= SI_SENDRECV;
            if (in->op == SI_OPTIM) {
                for (int b = 0; b < p->n_buckets; b++) {
                    if (p->buckets[b].stage != stage || p->dp < 2) continue;
                    if (!p->zero)
                        fprintf(out, "  all-reduce bucket %d over dp group (%d ranks): %s %ld bytes\n", b,
                                p->dp, dp_comm16(p) ? p->dp_comm : "fp32",
                                (dp_comm16(p) ? 2 : 4) * p->buckets[b].numel);
                    else
                        fprintf(out, "  ZeRO-%d bucket %d over dp group (%d ranks): reduce-scatter of %s gradients, "
                                "%ld bytes%s, %s parameters, %ld bytes%s\n",
                                p->zero, b, p->dp, dp_comm16(p) ? p->dp_comm : "fp32",
                                (dp_comm16(p) ? 2 : 4) * p->buckets[b].numel,
                                p->zero >= 2 ? " every microbatch into the gradient shard" : "",
                                param16(p) ? p->precision : "fp32",  /* as stored (param16.c) */
                                (param16(p) ? 2 : 4) * p->buckets[b].numel,
                                p->zero >= 3 ? " all-gathered before each use" : " all-gathered after the step");
                    print_bucket_timing(p, b, out);
                }
                if (p->pp > 1 && (stage == 0 || stage == p->pp - 1) && !s->pro)
                    fprintf(out, "  all-reduce tied wte gradient between stages 0 and %d\n", p->pp - 1);
            }
            fprintf(out, "  #%-3d %s", i, buf);
            const char *dt = p->act16 ? p->precision : "fp32";
            if (msg && s->split > 1)
                fprintf(out, "  [%s %ld bytes: this tp rank's 1/%d slice of %ld, pp group]", dt, pipe_send_bytes(p),
                        s->split, bytes);
            else if (msg)
                fprintf(out, "  [%s %ld bytes, pp group]", dt, bytes);
            if (in->op == SI_GATHER)  /* a ring all-gather: each member sends (tp - 1) / tp of it */
                fprintf(out, "  [%s %ld bytes all-gathered over the tp group of %d: %ld sent by this rank]", dt,
                        bytes, p->tp, bytes / p->tp * (p->tp - 1));
            if ((in->op == SI_FWD || in->op == SI_BWD || in->op == SI_BWD_INPUT) && p->tp > 1) {
                char coll[160];
                int chunk = p->pp > 1 ? in->chunk : 0;
                tp_collectives(p, chunk, in->op != SI_FWD, coll, sizeof coll);
                if (coll[0]) fprintf(out, "  [tp group of %d: %s]", p->tp, coll);
            }
            fputc('\n', out);
        }
        print_ckpt(p, r, stage, dp, tp, s->n[stage] - 1, out);
    }
}

int inspect_plan(const Program *p, int only_rank, const char *format, FILE *out) {
    schedule own = { 0 };
    const schedule *s = the_schedule(p, &own);
    if (!s) {
        wf_error("%s: cannot build the schedule to inspect", p->plan_path);
        return -1;
    }
    int rc = 0;
    if (strcmp(format, "text") == 0) {
        fprintf(out, "plan %s: dp %d x tp %d x pp %d = %d ranks, %s schedule, %d microbatches\n",
                p->plan_name, p->dp, p->tp, p->pp, p->world, p->pp > 1 ? p->schedule : "single-stage",
                p->accum);
        if (p->act16)  /* act16.c: bf16 / fp16 */
            fprintf(out, "activations: %s (16-bit storage)\n", p->precision);
        if (count_fused(p) > 0) {  /* fuse.c: which layernorms take their add along */
            fprintf(out, "fused residual_layernorm (add + layernorm in one kernel), %d:", count_fused(p));
            for (int i = 0; i < p->n_ops; i++) {
                if (p->ops[i].fused != FUSED_ADD_LN_NORM) continue;
                const char *w = p->params[p->ops[i].param[0]].name;  /* "h.0.ln_2.weight" */
                const char *dot = strrchr(w, '.');
                fprintf(out, " %.*s", dot ? (int)(dot - w) : (int)strlen(w), w);
            }
            fputc('\n', out);
        }
        if (count_fused_linear_gelu(p) > 0) {  /* fuse.c: which linears take their gelu along */
            fprintf(out, "fused linear_gelu (linear + gelu in one call), %d:", count_fused_linear_gelu(p));
            for (int i = 0; i < p->n_ops; i++) {
                if (p->ops[i].fused != FUSED_LIN_GELU_LINEAR) continue;
                const char *w = p->params[p->ops[i].param[0]].name;  /* "h.0.mlp.c_fc.weight" */
                const char *dot = strrchr(w, '.');
                fprintf(out, " %.*s", dot ? (int)(dot - w) : (int)strlen(w), w);
            }
            fputc('\n', out);
        }
        if (count_fused_linear_dgelu(p) > 0) {  /* fuse.c: which linears' input gradients take the gelu's */
            fprintf(out, "fused linear_dgelu (input gradient + gelu backward in one call), %d:",
                    count_fused_linear_dgelu(p));
            for (int i = 0; i < p->n_ops; i++) {
                if (p->ops[i].dgelu != DGELU_LINEAR) continue;
                const char *w = p->params[p->ops[i].param[0]].name;  /* "h.0.mlp.c_proj.weight" */
                const char *dot = strrchr(w, '.');
                fprintf(out, " %.*s", dot ? (int)(dot - w) : (int)strlen(w), w);
            }
            fputc('\n', out);
        }
        if (p->image_positions > 0) {  /* a VLM: its encoder's share of the first chunk, in FLOPs */
            double tokens = (double)p->micro * p->seq, enc = 0;
            for (int i = p->chunk_first_op[0]; i < p->chunk_end_op[0]; i++) {
                const op_row *r = op_row_of(p->ops[i].kind);
                if (r->flops && op_in_encoder(p, i)) enc += tokens * r->flops(p, &p->ops[i]);
            }
            double first = chunk_flops(p, 0);
            fprintf(out, "encoder   vision encoder and projector %.4g MFLOP of the first chunk's %.4g MFLOP forward "
                         "per microbatch (%.1f%%; the matmuls, as partition weighs them)\n",
                    enc / 1e6, first / 1e6, first > 0 ? 100.0 * enc / first : 0);
        }
        print_streams(p, s, only_rank, out);
        fprintf(out, "timeline (unit costs):\n");
        schedule_timeline(s, out);
        /* a save sits at the step boundary, after the timeline's last column */
        fprintf(out, "step boundary: checkpoint writers");
        for (int st = 0; st < p->pp; st++) fprintf(out, "%s rank %d (stage %d)", st ? "," : "", writer_of(p, st), st);
        fprintf(out, "; --async-save blocks training for the host copy only\n");
    } else {
        /* one microsecond per FLOP at the device's peak, and bytes at LINK_GBS */
        double peak = p->device_fp32_tflops * 1e12;
        double f_us = chunk_flops(p, 0) / peak * 1e6, comm_us = boundary_bytes(p) / (LINK_GBS * 1e3);
        trace t = { 0 };
        rc = trace_from_schedule(&t, s, f_us, 2 * f_us, f_us, comm_us);
        if (rc == 0) {
            char title[256];
            snprintf(title, sizeof title, "%s: dp %d x tp %d x pp %d, %s, %d microbatches", p->plan_name,
                     p->dp, p->tp, p->pp, p->pp > 1 ? p->schedule : "single stage", p->accum);
            rc = strcmp(format, "chrome") == 0 ? trace_write_chrome(&t, title, out)
                                               : trace_write_svg(&t, title, out);
        }
        trace_free(&t);
    }
    if (s == &own) schedule_free(&own);
    return rc;
}
