/* import_ds.h: `weft import-deepspeed`, a DeepSpeed config JSON to a Weft plan. */
#ifndef WEFT_IMPORT_DS_H
#define WEFT_IMPORT_DS_H
#include <stddef.h>
#include <stdio.h>

/* Reads the DeepSpeed config `ds_json_path` and writes a Weft plan to
 * `out_path` for `world` data-parallel ranks (mesh.dp = world; a DeepSpeed
 * config says nothing about tensor or pipeline parallelism).
 *
 * The model, and `data` and `cluster` when present, are copied textually from
 * the existing plan `model_plan_path`: the expressions after `model =`
 * (which must start with `w.` or `weft.`), `cluster =` and `data =`, found by
 * a scan that skips Lua comments and strings and balances brackets.
 *
 * Translation (see import_ds.c for the details):
 *   train_batch_size / train_micro_batch_size_per_gpu /
 *   gradient_accumulation_steps -> batch { micro, global }, with DeepSpeed's
 *     rule train_batch_size = micro * accumulation * world (any two give the third)
 *   zero_optimization.stage -> zero; offload_optimizer/offload_param.device
 *     -> offload { optimizer, params } ("nvme" is an error);
 *     reduce_bucket_size (elements) -> buckets.mb = elements * bytes / 2^20,
 *     bytes = 4 for fp32 and 2 for fp16/bf16; other ZeRO knobs -> comments
 *   fp16 / bf16 -> precision; fp16 loss scaling -> a comment block (weft has
 *     no loss-scale field yet, so the plan still checks)
 *   gradient_clipping -> clip_grad_norm
 *   optimizer Adam/AdamW -> weft.adamw; scheduler WarmupLR/WarmupDecayLR ->
 *     warmup, min_lr, train.steps
 *   activation_checkpointing.partition_activations -> recompute = "full"
 *   other top-level keys -> a warning
 *
 * Note that weft's own checks still apply when the plan is compiled: this
 * version only runs zero 0/1, fp32 and offload.optimizer; the importer writes
 * what the config says and `weft check` reports the rest with file:line.
 *
 * Warnings (one line each, "warning: KEY: ...") go to `warnings` (may be
 * NULL) once the import has succeeded.  The plan is written atomically (a
 * temporary file next to out_path, then rename).  Returns 0 on success; -1
 * with a one-line message in err (naming the JSON key and what would be
 * valid) on failure, in which case out_path is left as it was. */
int import_deepspeed(const char *ds_json_path, const char *model_plan_path, int world,
                     const char *out_path, FILE *warnings, char *err, size_t errlen);

#endif
