/* ops_vision.c: the vision encoder's rows (ops.c) for weft.vlm: the patch
 * embedding of each sample's image, and the hand-off that puts the
 * projected patches in place of the image placeholders' token embeddings.
 * The encoder's attention is the attention row with a prefix
 * (ops_attention.c).  Rows are tokens here as everywhere: each sample's P
 * patches are its rows [0, P) (the WVLM format puts the placeholders first,
 * runtime/common/data_vlm.h); its rows past P carry zeros through the
 * encoder and are dropped at the hand-off.  Under tensor parallelism both
 * ops run whole on every rank (their inputs and output are replicated);
 * under sequence parallelism each tp rank runs them on its own rows, as the
 * language model's embedding is (the encoder's stream split as the LLM's):
 * the patch embedding's parameters then get partial gradients (tp_partial). */
#include "ops.h"

/* ---- patch_embed: image -> (N, D), weight [D, C, p, p], position embedding [P, D] ---- */
const char *patch_embed_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    const ir_param *w = &p->params[o->param[0]], *pos = &p->params[o->param[1]];
    long D = op_out_width(p, o);
    if (p->image_positions < 1 || p->patch < 1) return "a patch embedding needs the model's image (weft.vlm)";
    if (w->ndim != 4 || w->shape[0] != D || w->shape[1] != p->image_c || w->shape[2] != p->patch ||
        w->shape[3] != p->patch)
        return "patch embedding weight must be [width, channels, patch, patch]";
    if (pos->ndim != 2 || pos->shape[0] != p->image_positions || pos->shape[1] != D)
        return "position embedding must be [patches, width]";
    if (p->image_positions > p->seq) return "the image's patches do not fit the sequence";
    return NULL;
}

/* the patches of one image, (P, C p p) floats */
long patch_embed_scratch(const Program *p, const ir_op *o) {
    (void)o;
    return (long)p->image_positions * p->image_c * p->patch * p->patch;
}

int vision_shard(shard_ctx *r, const ir_op *o) {
    Program *p = shard_program(r);
    int rows_div = p->sp ? p->tp : 1;
    for (int k = 0; k < o->n_param; k++) p->params[o->param[k]].tp_partial = p->sp;
    return shard_add(r, o->kind, o, shard_in(r, o, 0), shard_in(r, o, 1), o->n_param > 0 ? o->param[0] : -1,
                     o->n_param > 1 ? o->param[1] : -1, op_out_width(p, o), rows_div);
}

/* 1: this tp rank's rows (sequence parallelism) */
int vision_variant(const Program *p, const ir_op *o) {
    return p->tensors[o->out].rows_div > 1;
}

/* act16 (act16.c) for both rows.  The audit: patch_embed writes one
 * activation, its output (the image rows' embeddings plus positions, zeros
 * past them), which emit_ops.c rounds after it in the float-storage form;
 * its backward reads that output's gradient and writes only parameter
 * gradients (the image is uint8 input, not an activation).  image_merge
 * copies each row of its output from one of its two inputs (16-bit values
 * copied are those values) and its backward adds the output's gradient into
 * the inputs' gradients, which emit_ops.c rounds after it.  The CPU's entry
 * points stage these operands (runtime/cpu/vision.c), so 16-bit storage
 * changes no bit there, whole or on a tp rank's rows; CUDA's kernels
 * (runtime/cuda/vision.cu, the encoder's prefix attention too) load and
 * store them in c's storage, each stored value computed in floats and
 * rounded once.  On CUDA a plan with frozen parameters (weft.vlm's freeze)
 * keeps float storage: act16's GEMMs read 16-bit copies of their weights,
 * which would round the frozen fp32 weights the CPU reads as they are. */
int vision_act16(const Program *p, const ir_op *o) {
    (void)o;
    if (backend_of(p)->act16_staged) return 1;
    for (int k = 0; k < p->n_params; k++)
        if (p->params[k].frozen) return 0;
    return 1;
}

/* A VLM's vision encoder and projector: the ops before the image hand-off
 * (image_merge), less the language model's token embedding and position
 * add that precede it.  simulate and inspect price them, --profile times
 * them (emit_ops.c's WF_PROF_ENCODER): one rule for all three. */
int op_in_encoder(const Program *p, int i) {
    if (p->image_positions <= 0) return 0;
    int merge = -1;
    for (int j = 0; j < p->n_ops && merge < 0; j++)
        if (p->ops[j].kind == OP_IMAGE_MERGE) merge = j;
    const ir_op *o = &p->ops[i];
    return i < merge && !op_row_of(o->kind)->lookup && o->kind != OP_POS_ADD;
}

double patch_embed_flops(const Program *p, const ir_op *o) {
    return 2.0 * p->image_c * p->patch * p->patch * op_out_width(p, o) * p->image_positions / p->seq;
}

void patch_embed_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (vision_variant(p, &p->ops[i])) {
        emit(wr, "    %s(c, a + %s, wf_scratch(c), wf_images(c), w + %s, w + %s, %s, %s, T, %d, %d, %d, %d, %ld);\n",
             k->fwd, x->out, x->w0, x->w1, x->row0, x->rows, p->image_h, p->image_w, p->image_c, p->patch, x->width);
        return;
    }
    emit(wr, "    %s(c, a + %s, wf_scratch(c), wf_images(c), w + %s, w + %s, B, T, %d, %d, %d, %d, %ld);\n", k->fwd,
         x->out, x->w0, x->w1, p->image_h, p->image_w, p->image_c, p->patch, x->width);
}

void patch_embed_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (vision_variant(p, &p->ops[i])) {
        emit(wr, "    %s(c, g + %s, g + %s, wf_scratch(c), d + D_%s, wf_images(c), %s, %s, T, %d, %d, %d, %d, %ld);\n",
             k->bwd, x->g0, x->g1, x->out, x->row0, x->rows, p->image_h, p->image_w, p->image_c, p->patch, x->width);
        return;
    }
    emit(wr, "    %s(c, g + %s, g + %s, wf_scratch(c), d + D_%s, wf_images(c), B, T, %d, %d, %d, %d, %ld);\n",
         k->bwd, x->g0, x->g1, x->out, p->image_h, p->image_w, p->image_c, p->patch, x->width);
}

/* ---- image_merge: (text embeddings, projected patches) -> the LM's input rows ---- */
const char *image_merge_check(const Program *p, int i) {
    const ir_op *o = &p->ops[i];
    long out = op_out_width(p, o);
    if (o->n_in != 2 || out != op_in_width(p, o, 0) || out != op_in_width(p, o, 1))
        return "image_merge needs text and image rows of its output width";
    if (p->image_positions < 1) return "image_merge needs the model's image (weft.vlm)";
    return NULL;
}

void image_merge_emit_fwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (vision_variant(p, &p->ops[i])) {
        emit(wr, "    %s(c, a + %s, a + %s, a + %s, %s, %s, T, %d, %ld);\n", k->fwd, x->out, x->in0, x->in1, x->row0,
             x->rows, p->image_positions, x->width);
        return;
    }
    emit(wr, "    %s(c, a + %s, a + %s, a + %s, B, T, %d, %ld);\n", k->fwd, x->out, x->in0, x->in1, p->image_positions,
         x->width);
}

void image_merge_emit_bwd(writer *wr, const Program *p, int i, const operands *x, const op_kernels *k) {
    if (vision_variant(p, &p->ops[i])) {
        emit(wr, "    %s(c, d + D_%s, d + D_%s, d + D_%s, %s, %s, T, %d, %ld);\n", k->bwd, x->in0, x->in1, x->out,
             x->row0, x->rows, p->image_positions, x->width);
        return;
    }
    emit(wr, "    %s(c, d + D_%s, d + D_%s, d + D_%s, B, T, %d, %ld);\n", k->bwd, x->in0, x->in1, x->out,
         p->image_positions, x->width);
}
