/* datagen_vlm.h: writing WVLM multimodal record files (the format is
 * described in runtime/common/data_vlm.h) from real PNG / JPEG files with
 * captions (`weft data vlm`) or from procedurally drawn shapes whose
 * captions describe them (`weft data vlm-synth`).
 *
 * Both writers are atomic (compiler/output.h): a temporary sibling renamed
 * over the output once complete; on any failure nothing is left and an
 * existing file is untouched.  Functions return 0 or -1 with a message in
 * err. */
#ifndef WEFT_DATAGEN_VLM_H
#define WEFT_DATAGEN_VLM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* 0 (or -1 for the token ids) means the mode's default. */
typedef struct {
    int image;       /* square side H = W */
    int patch;       /* P = (image / patch)^2 placeholder positions */
    int seq;         /* model positions; a record holds seq + 1 tokens */
    int vocab;
    int image_token; /* -1: default */
    int pad_token;   /* -1: default (vocab - 1, or vocab - 2 if that is the image token) */
} wf_vlm_opts;

/* Captions file: one JSON object per line (blank lines skipped),
 *   {"image": "NAME", "text": "a caption"}   byte-level: one token per byte
 *   {"image": "NAME", "ids": [12, 7, 3]}     pre-tokenised ids
 * NAME is relative to images_dir.  Defaults: image 224, patch 16, seq 512,
 * vocab 258, image token 256 (byte text needs ids 256 and up for the image
 * and pad tokens).  Every bad image or line is written to diag as
 * "weft: error: PATH: why" (or "CAPTIONS:LINE: why") before failing. */
int wf_data_vlm(const char *images_dir, const char *captions, const char *out_path,
                const wf_vlm_opts *opts, long *count_out, FILE *diag,
                char *err, size_t errlen);

/* The synthetic grammar: "a COLOUR SHAPE on the POSITION", one token per
 * word; word ids are indices into wf_vlm_synth_words. */
enum { WF_SYNTH_COLOURS = 4, WF_SYNTH_SHAPES = 3, WF_SYNTH_POSITIONS = 4,
       WF_SYNTH_WORDS = 3 + WF_SYNTH_COLOURS + WF_SYNTH_SHAPES + WF_SYNTH_POSITIONS,
       WF_SYNTH_CAPTION = 6 };
extern const char *const wf_vlm_synth_words[WF_SYNTH_WORDS];
/* first word id of each attribute */
#define WF_SYNTH_COLOUR0 3
#define WF_SYNTH_SHAPE0 (WF_SYNTH_COLOUR0 + WF_SYNTH_COLOURS)
#define WF_SYNTH_POSITION0 (WF_SYNTH_SHAPE0 + WF_SYNTH_SHAPES)
/* RGB of each colour word and of the background */
extern const uint8_t wf_vlm_synth_rgb[WF_SYNTH_COLOURS][3];
extern const uint8_t wf_vlm_synth_background[3];

/* Draws record `index` of seed into rgb (h * w * 3) and returns its
 * attributes: attr[0] colour, attr[1] shape (0 circle, 1 square, 2
 * triangle), attr[2] position (0 left, 1 right, 2 top, 3 bottom), each
 * uniform and independent; size and placement jitter too.  h, w >= 16. */
void wf_vlm_synth_draw(uint64_t seed, long index, int h, int w, uint8_t *rgb, int attr[3]);

/* Entropy floors, nats per descriptive token (colour, shape, position):
 * without the image the three are uniform and independent of everything the
 * text shows, so (ln 4 + ln 3 + ln 4) / 3; with the image they are
 * determined, so 0. */
void wf_vlm_synth_floors(double *without_image, double *with_image);

/* Defaults: image 32, patch 8, seq = P + 8, vocab 16 (14 words, image token
 * 14, pad 15). */
int wf_data_vlm_synth(const char *out_path, long count, uint64_t seed,
                      const wf_vlm_opts *opts, char *err, size_t errlen);

#endif
