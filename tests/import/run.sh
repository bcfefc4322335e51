#!/usr/bin/env bash
# tests/import/run.sh [REPO_ROOT]: DeepSpeed config import (compiler/import_ds.c).
# Converts each config against plans/tiny.lua with `weft import-deepspeed` and
# checks the result:
#   good configs: an output plan with the expected lines; `weft check` passes
#                 (or, for what this version cannot run yet, fails with
#                 "not supported yet");
#   bad configs:  exit 1, the expected message, no output file written (and an
#                 existing one left as it was).
# WEFT=path overrides build/compiler/weft.  Prints one line per case and ends with
# "N passed, M failed"; exits non-zero on any failure.
set -u
root=${1:-.}
cd "$root" || { echo "cannot cd to $root"; echo "0 passed, 1 failed"; exit 1; }
WEFT=${WEFT:-build/compiler/weft}
dir=tests/import
model=plans/tiny.lua
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft_import.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
# drv JSON MODEL WORLD OUT: the CLI, `weft import-deepspeed`
drv() { "$WEFT" import-deepspeed "$1" --model "$2" --world "$3" -o "$4"; }

pass=0 fail=0
ok() { echo "PASS $1"; pass=$((pass + 1)); }
no() { echo "FAIL $1: $2"; fail=$((fail + 1)); }
finish() { echo "$pass passed, $fail failed"; [ "$fail" -eq 0 ]; exit $?; }

# good NAME JSON WORLD MODEL CHECK [LINE...]: CHECK is pass (weft check passes)
# or unsupported (weft check fails saying "not supported yet").
good() {
  local name=$1 json=$2 world=$3 plan=$4 check=$5
  shift 5
  local out=$tmp/$name.lua
  if ! drv "$json" "$plan" "$world" "$out" 2>"$tmp/$name.err"; then
    no "$name" "import failed: $(tail -1 "$tmp/$name.err")"; return
  fi
  [ -f "$out" ] || { no "$name" "no output plan"; return; }
  local line
  for line in "$@"; do
    grep -qF -- "$line" "$out" || { no "$name" "output lacks: $line"; return; }
  done
  if [ ! -x "$WEFT" ]; then no "$name" "$WEFT not built (cmake --build build)"; return; fi
  "$WEFT" check "$out" --set data.train=x >"$tmp/$name.check" 2>&1
  local rc=$?
  if [ "$check" = pass ] && [ $rc -ne 0 ]; then
    no "$name" "weft check failed: $(tail -1 "$tmp/$name.check")"; return
  fi
  if [ "$check" = unsupported ]; then
    if [ $rc -eq 0 ]; then no "$name" "weft check passed; expected \"not supported yet\""; return; fi
    grep -qF "not supported yet" "$tmp/$name.check" ||
      { no "$name" "weft check: $(tail -1 "$tmp/$name.check")"; return; }
  fi
  ok "$name"
}

# bad NAME JSON SUBSTRING [MODEL]: rejected with SUBSTRING, nothing written.
bad() {
  local name=$1 json=$2 want=$3 plan=${4:-$model}
  local out=$tmp/$name.lua
  drv "$json" "$plan" 2 "$out" 2>"$tmp/$name.err"
  local rc=$?
  if [ $rc -ne 1 ]; then no "$name" "exit code $rc, expected 1"; return; fi
  grep -qF -- "$want" "$tmp/$name.err" ||
    { no "$name" "message lacks \"$want\": $(tail -1 "$tmp/$name.err")"; return; }
  if [ -e "$out" ] || compgen -G "$out.tmp*" >/dev/null; then
    no "$name" "an output file was written"; return
  fi
  ok "$name"
}

good good_zero1 $dir/good_zero1.json 2 $model pass \
  'zero = 1,' 'offload = { optimizer = "cpu", params = "none" }' 'precision = "fp32"' \
  'clip_grad_norm = 1,' 'batch = { micro = 8, global = 32 }' 'mesh = { dp = 2 }' \
  'buckets = { mb = 0.5 }' 'warmup = 20' 'min_lr = 0.0003' 'train = { steps = 400 }' \
  'model = w.gpt2 { layers = 4, hidden = 128, heads = 4, seq = 128, vocab = 256 }' \
  '--   overlap_comm = true'
good good_derive $dir/good_derive.json 2 $model pass \
  'batch = { micro = 4, global = 16 }' 'recompute = "full"' 'betas = { 0.9, 0.999 }' \
  'weight_decay = 0,' 'clip_grad_norm = 0,' 'min_lr = 0.001'
good good_fp16 $dir/good_fp16.json 2 $model pass \
  'precision = "fp16",' 'loss_scale = { initial_scale_power = 12, window = 500, hysteresis = 1, min = 2 },'
good good_fp16_static $dir/good_fp16_static.json 2 $model pass \
  'precision = "fp16",' 'loss_scale = 128,'
# No "optimizer" section (the training script passes its own, as DeepSpeed
# allows): the model plan's w.adamw is copied, with a warning saying so.
good good_no_optimizer $dir/good_no_optimizer.json 2 $model pass \
  'optimizer = w.adamw { lr = 3e-3, min_lr = 3e-4, warmup = 20, weight_decay = 0.1 },  -- from the model plan' \
  'zero = 3,' 'offload = { optimizer = "cpu", params = "cpu" }' 'precision = "fp16",' \
  'window = 500' 'clip_grad_norm = 1,' 'batch = { micro = 8, global = 32 }'
if drv $dir/good_no_optimizer.json $model 2 "$tmp/noopt.lua" 2>"$tmp/noopt.err" &&
   grep -qF "optimizer: missing (the training script passes its own): the --model plan's optimizer is used" "$tmp/noopt.err"; then
  ok "no optimizer: warned"
else
  no "no optimizer: warned" "$(tail -1 "$tmp/noopt.err")"
fi
good model_tricky $dir/good_zero1.json 2 $dir/model_tricky.lua pass \
  'heads = 4, seq = 64, vocab = 256,' 'data = { train = "data/tricky.bin" },'
good zero3_70b $dir/zero3_70b.json 64 plans/llama_70b.lua pass \
  'model = w.llama { layers = 80, hidden = 8192, heads = 64, kv_heads = 8' \
  'mesh = { dp = 8, tp = 8, pp = 1, sp = true }' \
  'zero = 3,' 'precision = "fp16",' 'offload = { optimizer = "cpu", params = "cpu" }' \
  'batch = { micro = 1, global = 1024 }' 'buckets = { mb = 953.674 }' \
  'loss_scale = { initial_scale_power = 16, window = 1000, hysteresis = 2, min = 1 }' \
  'zero_prefetch_mb = 858.307,  -- stage3_prefetch_bucket_size = 450000000 elements x 2 bytes' \
  'train = { steps = 250000 }'
# The 70B plan's memory verdict: fp16 model states sharded by ZeRO-3 over dp 8
# after tp 8, the optimizer (12 Psi: fp32 master, m, v) and the parameter shard
# (2 Psi: 16-bit working parameters, plan.param_storage "auto") offloaded.
if "$WEFT" check "$tmp/zero3_70b.lua" --set data.train=x >"$tmp/70b.check" 2>&1 &&
   grep -q "fits in the 80.00 GiB" "$tmp/70b.check" && grep -q "host (offload) *14.05 GiB" "$tmp/70b.check"; then
  ok "zero3_70b memory: fits, 14.05 GiB host (12 + 2 bytes x 69.0e9 / 64)"
else
  no "zero3_70b memory" "$(grep -E 'verdict|host' "$tmp/70b.check")"
fi
# world must hold the model plan's tp * pp
if ! drv $dir/zero3_70b.json plans/llama_70b.lua 60 "$tmp/w60.lua" 2>"$tmp/w60.err" &&
   grep -qF "world = 60 is not a multiple of the model plan's tp * pp = 8 * 1" "$tmp/w60.err" &&
   [ ! -e "$tmp/w60.lua" ]; then
  ok "world not a multiple of tp * pp"
else
  no "world not a multiple of tp * pp" "$(tail -1 "$tmp/w60.err")"
fi

# Warnings name unknown keys.
if drv $dir/good_zero1.json $model 2 "$tmp/warn.lua" 2>"$tmp/warn.err" &&
   grep -qF "wall_clock_breakdown: has no meaning" "$tmp/warn.err" &&
   grep -qF "steps_per_print: has no meaning" "$tmp/warn.err" &&
   grep -qF "zero_optimization.overlap_comm: accepted" "$tmp/warn.err"; then
  ok "warnings"
else
  no "warnings" "$(head -3 "$tmp/warn.err")"
fi

bad bad_batch $dir/bad_batch.json \
  "train_batch_size = 30, but train_micro_batch_size_per_gpu * gradient_accumulation_steps * world = 8 * 2 * 2 = 32"
bad bad_fp16_bf16 $dir/bad_fp16_bf16.json "fp16.enabled and bf16.enabled are both true"
bad bad_fp16_scale $dir/bad_fp16_scale.json "fp16.loss_scale = 1000 is not a power of two"
bad bad_fp16_power $dir/bad_fp16_power.json "fp16.initial_scale_power: 32 is out of range (valid: an integer in 0 .. 24)"
bad bad_stage4 $dir/bad_stage4.json "zero_optimization.stage: 4 is out of range (valid: 0, 1, 2 or 3)"
bad bad_optimizer $dir/bad_optimizer.json 'optimizer.type: "Lamb" is not supported (valid: "Adam" or "AdamW")'
bad bad_malformed $dir/bad_malformed.json "malformed JSON at line 2"
bad bad_negative_micro $dir/bad_negative_micro.json "train_micro_batch_size_per_gpu: -4 is out of range"
bad bad_nvme $dir/bad_nvme.json 'zero_optimization.offload_optimizer.device: "nvme"'
bad bad_lr $dir/bad_lr.json "optimizer.params.lr: 0 is out of range (valid: a number > 0"
bad bad_auto $dir/bad_auto.json 'train_batch_size: "auto"'
bad bad_type $dir/bad_type.json 'gradient_clipping: expected a number, got string "1.0"'
bad bad_missing_file $dir/no_such_file.json "cannot read"
bad bad_model_variable $dir/good_zero1.json "model = m: the importer copies" $dir/model_variable.lua

# A failed import leaves an existing output as it was.
printf 'sentinel\n' >"$tmp/keep.lua"
if ! drv $dir/bad_batch.json $model 2 "$tmp/keep.lua" 2>/dev/null &&
   [ "$(cat "$tmp/keep.lua")" = sentinel ] && ! compgen -G "$tmp/keep.lua.tmp*" >/dev/null; then
  ok "existing output untouched"
else
  no "existing output untouched" "the file changed"
fi

finish
