/* ckpt_manifest.h: manifest.json, what makes a checkpoint folder
 * verifiable.
 *
 *   {"format": "weft-checkpoint", "version": 1,
 *    "step": 10, "samples_seen": 160, "global_batch": 16, "seed": 1337,
 *    "plan": "plans/tiny.lua", "plan_hash": "...", "model": "gpt2 L2 h64 ...",
 *    "loss_scale": {"scale": 65536, "hysteresis": 2, "good_steps": 3,
 *                   "skipped": 0},                      (fp16 programs only)
 *    "config": {...config.json...},
 *    "files": {"config.json": {"bytes": 612, "crc32c": "1a2b3c4d"},
 *              "model.safetensors": {"bytes": N, "crc32c": "...",   (pp > 1: each
 *                  shard model-0000S-of-0000N.safetensors and the index
 *                  model.safetensors.index.json, ckpt_shards.h)
 *                  "tensors": {"wte.weight": {"shape": [256, 64],
 *                                             "crc32c": "..."}, ...}}, ...}}
 *
 * Checksums are CRC-32C (crc32c.h) of the file, and of each tensor's bytes as
 * stored.  Functions return 0 on success, -1 with a one-line message in err
 * that names the file, the tensor or field, and the check that failed. */
#ifndef WEFT_CKPT_MANIFEST_H
#define WEFT_CKPT_MANIFEST_H

#include <stddef.h>

#include "safetensors.h"

#define WF_CKPT_MANIFEST "manifest.json"

typedef struct wf_ckpt_info {
    long step, samples_seen, global_batch;
    unsigned long long seed;
    char plan[1024], plan_hash[136], model[160];
    int has_scaler;             /* fp16's loss scaler state, all four or none */
    double scale;
    long hysteresis, good_steps, skipped;
} wf_ckpt_info;

/* The checksums of files this process wrote, taken as it wrote them
 * (wf_st_write_sums), so that the manifest need not read them back. */
typedef struct wf_manifest_known wf_manifest_known;
wf_manifest_known *wf_manifest_known_new(void);
/* Records file name (a name in the folder) written from tensors t[0..n) with
 * the checksums s; 0, or -1 out of memory. */
int wf_manifest_known_add(wf_manifest_known *k, const char *name, const wf_st_tensor *t, int n,
                          const wf_st_sums *s);
void wf_manifest_known_free(wf_manifest_known *k);  /* NULL is allowed */
/* A pipeline stage's writer hands its files' checksums to world rank 0
 * through the folder: saved as JSON (a temporary sibling, fsync'ed, renamed:
 * present only once complete), loaded into root's known (entries added,
 * a file listed again replaced). */
int wf_manifest_known_save(const wf_manifest_known *k, const char *path, char *err, size_t errlen);
int wf_manifest_known_load(wf_manifest_known *k, const char *path, char *err, size_t errlen);

/* Writes dir/manifest.json (fsync'ed) for the files now in dir (every
 * regular file but the marker), with the checkpoint's facts from info and
 * the program's config.json text.  A file in known (may be NULL) is listed
 * with its recorded checksums once its size on disk is checked equal to the
 * recorded one; every other file is read to checksum it.  The manifest is
 * the same either way. */
int wf_manifest_write(const char *dir, const wf_ckpt_info *info, const char *config_text,
                      const wf_manifest_known *known, char *err, size_t errlen);

/* Verifies dir against its manifest: every listed file a regular file (no
 * symbolic link, FIFO or device) of the listed size and checksum; each
 * safetensors file's tensors (none missing, none extra, shapes, finite
 * values, checksums) and its metadata (step, data position, model, loss
 * scaler) equal to the manifest's; every number parsed strictly (the step a
 * non-negative integer, the loss scale finite and positive).  Fills info. */
int wf_ckpt_verify(const char *dir, wf_ckpt_info *info, char *err, size_t errlen);

/* dir/config.json describes the same model as config_text (the program's):
 * every field equal but torch_dtype (the training precision, which a resume
 * may change). */
int wf_ckpt_config_check(const char *dir, const char *config_text, char *err, size_t errlen);

/* A non-negative decimal integer, all of s ("abc", "-50", "1e3", "" fail). */
int wf_parse_count(const char *s, long *out);

/* The text of a regular file of at most max_bytes (NUL-terminated; the
 * caller frees), never through a link or from a FIFO; NULL with a message
 * naming it as shown. */
char *wf_ckpt_read_text(const char *path, const char *shown, long max_bytes, char *err, size_t errlen);

/* text and a newline as the file path: written to a temporary sibling,
 * fsync'ed and renamed over path, so path is whole or as it was. */
int wf_ckpt_write_text(const char *path, const char *text, char *err, size_t errlen);

#endif
