/* batch_vlm.c: a VLM plan's microbatches (weft.vlm; p->image_positions > 0):
 * images, input tokens and targets from a WVLM file (data_vlm.h) instead of
 * a token file.  A position whose target carries no loss (an image
 * placeholder or padding: mask 0) gets target -1, which the LM head skips
 * (no loss, no gradient).  The step's loss is the mean over the loss
 * positions of the whole global batch: every rank counts them itself (the
 * sampling is a pure function of (seed, global sample index)), so the
 * gradient scale is the same in every layout and no rank waits on another
 * for it.  The loss on the descriptive positions (mask 2: the words the
 * image determines) is reported beside it.  PipeDream-2BW keeps two batches
 * in flight: batch r in the buffers' half r % 2, with its own loss scale. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Opens the data (c->images and c->loss_mask are allocated with the arenas,
 * train.c, which the memory plan counts). */
void wf_vlm_batch_setup(wf_ctx *c) {
    const wf_program *p = c->p;
    char err[512];
    wf_vlm_shape want = { p->image_h, p->image_w, p->image_c, p->seq, p->vocab, p->image_token, p->image_positions };
    if (wf_vlm_open(&c->vlm, c->opt.data, &want, err, sizeof err) != 0)
        wf_fatal(c, "wf_vlm_open", WF_WHERE, "%s", err);
    /* the encoder's rows are each sample's first P: the placeholders must be there */
    const uint8_t *image, *tokens, *mask;
    if (wf_vlm_record(c->vlm, 0, &image, &tokens, &mask) == 0)
        for (int i = 0; i < p->image_positions; i++)
            if ((tokens[2 * i] | tokens[2 * i + 1] << 8) != p->image_token)
                wf_fatal(c, "wf_vlm_open", WF_WHERE, "%s: the image placeholders start at position > 0; "
                         "weft.vlm reads them at positions 0 .. %d", c->opt.data, p->image_positions - 1);
}

/* Loss positions in global samples [g0, g0 + n). */
static double loss_positions(const wf_ctx *c, uint64_t g0, long n) {
    const wf_program *p = c->p;
    double count = 0;
    for (long j = 0; j < n; j++) {
        const uint8_t *image, *tokens, *mask;
        long r = wf_vlm_index(c->vlm, p->seed, g0 + (uint64_t)j);
        if (wf_vlm_record(c->vlm, r, &image, &tokens, &mask) != 0) continue;
        for (int i = 1; i <= p->seq; i++) count += mask[i] != 0;
    }
    return count;
}

/* A microbatch of batch `batch` (global samples base .. base + micro - 1)
 * into buffer slot `slot` (the microbatch's index; under 2BW (batch % 2) x
 * accum + its index). */
void wf_vlm_batch_load(wf_ctx *c, int slot, long batch, uint64_t base) {
    const wf_program *p = c->p;
    long T = p->seq, N = (long)p->micro * T, img = (long)p->image_h * p->image_w * p->image_c;
    char err[512];
    int m = slot;
    if (slot % p->accum == 0) {  /* the batch's first microbatch: the global batch's loss positions */
        double n = loss_positions(c, (uint64_t)batch * (uint64_t)p->global_batch, p->global_batch);
        int half = slot / p->accum;
        c->vlm_positions[half] = n;
        c->vlm_scale[half] = (float)(1.0 / (n > 0 ? n : 1));
        c->step_loss_positions = n;
        c->loss_scale = c->vlm_scale[half];
    }
    int32_t *tok = c->tokens + (long)m * N, *tgt = c->targets + (long)m * N;
    uint8_t *mask = c->loss_mask + (long)m * N, *im = c->images + (long)m * p->micro * img;
    for (int j = 0; j < p->micro; j++) {
        if (wf_vlm_sample(c->vlm, p->seed, base + (uint64_t)j, im + j * img, tok + j * T, tgt + j * T, mask + j * T,
                          err, sizeof err) != 0)
            wf_fatal(c, "wf_vlm_sample", WF_WHERE, "%s", err);
        for (long i = 0; i < T; i++)
            if (mask[j * T + i] == WF_VLM_MASK_NONE) tgt[j * T + i] = -1;
    }
}

const uint8_t *wf_images(wf_ctx *c) {
    const wf_program *p = c->p;
    return c->images + (long)c->micro_index * p->micro * p->image_h * p->image_w * p->image_c;
}

/* After the LM head's forward: its per-token losses on the descriptive positions. */
void wf_vlm_add_losses(wf_ctx *c) {
    const wf_program *p = c->p;
    long N = (long)p->micro * p->seq;
    const uint8_t *mask = c->loss_mask + (long)c->micro_index * N;
    for (long i = 0; i < N; i++)
        if (mask[i] == WF_VLM_MASK_DESCRIPTIVE) {
            c->desc_loss_sum += c->losses[i];
            c->desc_count += 1;
        }
}

void wf_vlm_batch_close(wf_ctx *c) {
    if (c->vlm) wf_vlm_close(c->vlm);
}
