#!/usr/bin/env bash
# Rowwise user kernels end to end (README.md, "User kernels"): a LLaMA whose
# every RMSNorm is the rowwise kernel user_kernels/kernels/rmsnorm.c
# (norm = k, params = true) trains as the same model with the built-in
# RMSNorm under tp 2 with sequence parallelism and dp 2 (4 ranks): the
# kernel's weights are parameters named as the built-in's, initialised to
# ones, updated by the optimizer (a weight left out of it, or its gradient
# not reduced over the tp ranks under sp, changes the losses from step 2).
#
# Tolerance: none.  The kernel evaluates the built-in wf_rmsnorm_*
# expressions in the same order (runtime/cpu/llama.c: the double sums, r
# kept in a float for the backward), row by row, and dw sums the rows in
# the same order, so every logged loss and gradient norm must be equal to
# the built-in run's, bit for bit.
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
D=tests/e2e/user_kernels
sets="--set mesh.tp=2 --set mesh.sp=true --set train.steps=4"
for v in norm builtin; do
  # shellcheck disable=SC2086
  build_plan "llama_$v" "$D/llama_$v.lua" --set data.train="$DATA" $sets
  run_plan "llama_$v" --metrics "$WORK/llama_$v.jsonl" >/dev/null
done
a=$WORK/llama_norm.jsonl b=$WORK/llama_builtin.jsonl
check "4 steps logged" test "$(wc -l < "$a")" -eq 4
for field in loss grad_norm; do
  if r=$(same_field $field "$b" "$a" 0); then ok=true; else ok=false; fi
  check "llama tp 2 + sp, dp 2: the rowwise norm's $field equals the built-in RMSNorm's ($r)" $ok
done

# the program calls the kernel a row at a time, with its weight and gradient
check "stage0.c calls rms_bwd with the weight's gradient" \
  grep -q 'rms_bwd(64, x_ + r_ \* 64L, w + P_MODEL_NORM_WEIGHT, .*, g + P_MODEL_NORM_WEIGHT)' "$WORK/llama_norm/stage0.c"

# the CUDA program: a thread per row forward, the rows in order backward
for i in 1 2; do
  "$WEFT" compile "$D/llama_norm.lua" -o "$WORK/cuda$i" --backend cuda 2>/dev/null
done
check "generated CUDA byte-identical across compiles" cmp "$WORK/cuda1/stage0.cu" "$WORK/cuda2/stage0.cu"
check "the CUDA wrappers call the kernel per row" \
  grep -q 'rms_fwd(n, x + r \* n, w, y + r \* n);' "$WORK/cuda1/stage0.cu"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
