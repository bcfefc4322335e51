/* ckpt_shards.h: a checkpoint's tensors as one safetensors file or as a
 * Hugging Face sharded set.
 *
 * With pp > 1 each pipeline stage's writer saves its own tensors under their
 * final names, one shard a stage, as transformers' save_pretrained names
 * shards:
 *   model-00001-of-00002.safetensors, model-00002-of-00002.safetensors
 *   model.safetensors.index.json
 *     {"metadata": {"total_size": BYTES}, "weight_map": {"wte.weight":
 *      "model-00001-of-00002.safetensors", ...}}
 * (total_size: the tensors' data bytes, headers not counted), and the same
 * for the optimizer state (optimizer-0000S-of-0000N.safetensors,
 * optimizer.safetensors.index.json).  from_pretrained loads the model's set
 * as it is; with pp == 1 the folder keeps one model.safetensors.
 *
 * Functions return 0 on success, -1 with a one-line message in err that
 * names the file and what is wrong. */
#ifndef WEFT_CKPT_SHARDS_H
#define WEFT_CKPT_SHARDS_H

#include <stddef.h>
#include <stdio.h>

#include "safetensors.h"

/* BASE-0000S-of-0000N.safetensors for shard s (0-based) of n */
static inline void wf_ckpt_shard_name(char *out, size_t size, const char *base, int s, int n) {
    snprintf(out, size, "%s-%05d-of-%05d.safetensors", base, s + 1, n);
}

/* Writes dir/BASE.safetensors.index.json (fsync'ed, renamed in) for the n
 * shards dir/BASE-0000S-of-0000N.safetensors, from their headers: every
 * tensor name in exactly one shard (a name in two is refused); *total
 * receives total_size. */
int wf_ckpt_index_write(const char *dir, const char *base, int n, double *total, char *err, size_t errlen);

/* The tensors of one file, or of a sharded set. */
typedef struct wf_ckpt_set wf_ckpt_set;

/* path: a .safetensors file; or a sharded set named by its index
 * (BASE.safetensors.index.json), by its folder and BASE (dir/BASE.safetensors
 * absent, dir/BASE.safetensors.index.json present), or by that absent
 * dir/BASE.safetensors itself.  A set is checked against its index: every
 * shard present and valid, every tensor of a shard listed for that shard,
 * every listed tensor in its shard, total_size their bytes. */
int wf_ckpt_set_open(wf_ckpt_set **s, const char *path, char *err, size_t errlen);
/* the set of dir/BASE (BASE "model" or "optimizer") */
int wf_ckpt_set_open_in(wf_ckpt_set **s, const char *dir, const char *base, char *err, size_t errlen);
int wf_ckpt_set_count(const wf_ckpt_set *s);             /* tensors, all shards */
const char *wf_ckpt_set_name(const wf_ckpt_set *s, int i);  /* shard by shard, file order */
/* the file holding tensor name, or NULL if none does */
const wf_st_file *wf_ckpt_set_file(const wf_ckpt_set *s, const char *name);
/* the first file (for its metadata: every file of a checkpoint carries the same) */
const wf_st_file *wf_ckpt_set_first(const wf_ckpt_set *s);
/* what the set was opened from, for messages */
const char *wf_ckpt_set_path(const wf_ckpt_set *s);
/* its files (1 for a single file) and each one's name in its folder */
int wf_ckpt_set_files(const wf_ckpt_set *s);
const char *wf_ckpt_set_file_name(const wf_ckpt_set *s, int i);
void wf_ckpt_set_close(wf_ckpt_set *s);  /* NULL is allowed */

#endif
