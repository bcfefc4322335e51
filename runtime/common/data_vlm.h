/* data_vlm.h: multimodal (image + text) records, the "WVLM" format that
 * `weft data vlm` and `weft data vlm-synth` write and this reader maps.
 *
 * Layout (all integers little-endian):
 *   header: 256 int32 (1024 bytes), the rest zero --
 *     [0]  magic 0x4D4C5657 (the bytes "WVLM")      [1]  version 1
 *     [2]  image height H    [3]  image width W     [4]  channels C (3: RGB)
 *     [5]  seq S: the model's positions per sample (each record holds S+1
 *          tokens so that every position has a target)
 *     [6]  record count N (>= 1)
 *     [7]  vocab V (<= 65536: tokens are uint16)
 *     [8]  image token id: the placeholder the projected patches replace
 *     [9]  P: image placeholder positions per image ((H/patch) * (W/patch))
 *     [10] pad token id      [11] patch size (P was derived from it)
 *     [12] position of the first placeholder (0: the image comes first)
 *     [13] descriptive tokens per record (vlm-synth: 3; real data: 0)
 *     [14] record bytes = H*W*C + 3*(S+1) (a redundant check)
 *     [16..17] float64: entropy floor WITHOUT the image, nats per
 *              descriptive token (-1 when unknown, as for real data)
 *     [18..19] float64: the floor WITH the image (0 for vlm-synth)
 *   then N records of exactly [14] bytes each, nothing after the last:
 *     image:  H*W*C uint8, row-major (row, column, then R G B), at the
 *             model's resolution, NOT normalised (see below)
 *     tokens: S+1 uint16; t[12 .. 12+P) are the image token, then the
 *             caption, then pad tokens up to S+1
 *     mask:   S+1 uint8; 0 = no loss (placeholder, pad), 1 = text,
 *             2 = descriptive text (a word the image determines; also text).
 * Training reads inputs = t[0..S), targets = t[1..S], and position i's loss
 * counts iff mask[i+1] != 0, so the loss is over text positions only and the
 * first caption token is predicted from the last image position.  Every
 * record has the same size, so every rank's batch has the same shape.
 *
 * Normalisation is the model's input op's job, at run time, per channel:
 * x = (v / 255 - mean) / std, with SigLIP's mean = std = 0.5 or CLIP's
 * constants below.
 *
 * Sampling is a pure function of (seed, global sample index g): epoch
 * e = g / N visits every record once, in an order permuted by (seed, e).
 *
 * Errors are never printed: functions return 0 or -1 with a one-line
 * message in err naming the file and the field. */
#ifndef WEFT_DATA_VLM_H
#define WEFT_DATA_VLM_H

#include <stddef.h>
#include <stdint.h>

#define WF_VLM_MAGIC 0x4D4C5657
#define WF_VLM_VERSION 1
#define WF_VLM_HEADER_INTS 256
#define WF_VLM_HEADER_BYTES (WF_VLM_HEADER_INTS * 4)

/* header word indices */
enum {
    WF_VLM_H_MAGIC, WF_VLM_H_VERSION, WF_VLM_H_HEIGHT, WF_VLM_H_WIDTH,
    WF_VLM_H_CHANNELS, WF_VLM_H_SEQ, WF_VLM_H_COUNT, WF_VLM_H_VOCAB,
    WF_VLM_H_IMAGE_TOKEN, WF_VLM_H_IMAGE_POSITIONS, WF_VLM_H_PAD_TOKEN,
    WF_VLM_H_PATCH, WF_VLM_H_IMAGE_START, WF_VLM_H_DESCRIPTIVE,
    WF_VLM_H_RECORD_BYTES, WF_VLM_H_RESERVED,
    WF_VLM_H_FLOOR_TEXT = 16, /* float64 over words 16, 17 */
    WF_VLM_H_FLOOR_IMAGE = 18 /* float64 over words 18, 19 */
};

/* mask values */
#define WF_VLM_MASK_NONE 0
#define WF_VLM_MASK_TEXT 1
#define WF_VLM_MASK_DESCRIPTIVE 2

/* Per-channel (R, G, B) normalisation the vision encoder expects. */
#define WF_VLM_SIGLIP_MEAN { 0.5, 0.5, 0.5 }
#define WF_VLM_SIGLIP_STD { 0.5, 0.5, 0.5 }
#define WF_VLM_CLIP_MEAN { 0.48145466, 0.4578275, 0.40821073 }
#define WF_VLM_CLIP_STD { 0.26862954, 0.26130258, 0.27577711 }

static inline long wf_vlm_record_bytes(int h, int w, int c, int seq)
{
    return (long)h * w * c + 3L * (seq + 1);
}

/* The shapes a plan expects; open checks every field against the header. */
typedef struct {
    int height, width, channels, seq, vocab, image_token, image_positions;
} wf_vlm_shape;

typedef struct wf_vlm wf_vlm;

/* Maps path read-only and validates it: a regular file, magic, version,
 * every field of want, record bytes, size exactly header + N records, and
 * every record's tokens (< vocab, the image token exactly at the P
 * placeholder positions, mask 0 there, mask values 0..2). */
int wf_vlm_open(wf_vlm **out, const char *path, const wf_vlm_shape *want,
                char *err, size_t errlen);

long wf_vlm_count(const wf_vlm *d);
/* Entropy floors stored in the header (-1: unknown). */
void wf_vlm_floors(const wf_vlm *d, double *without_image, double *with_image);

/* The record global sample g reads: a pure function of (seed, g, N). */
long wf_vlm_index(const wf_vlm *d, uint64_t seed, uint64_t g);

/* Record r's raw parts (pointers into the mapping): image H*W*C bytes, S+1
 * little-endian uint16 tokens, S+1 mask bytes. */
int wf_vlm_record(const wf_vlm *d, long r, const uint8_t **image,
                  const uint8_t **tokens, const uint8_t **mask);

/* Sample g: image (H*W*C bytes), inputs[0..S), targets[0..S) and
 * loss[0..S) (loss[i] = mask[i+1]: 0 none, 1 text, 2 descriptive). */
int wf_vlm_sample(const wf_vlm *d, uint64_t seed, uint64_t g, uint8_t *image,
                  int32_t *inputs, int32_t *targets, uint8_t *loss,
                  char *err, size_t errlen);

void wf_vlm_close(wf_vlm *d);

#endif
