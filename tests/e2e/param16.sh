#!/usr/bin/env bash
# plan.param_storage: the working parameters of a bf16 / fp16 plan stored in
# 2 bytes ("auto", the CPU backend) against the float arena of the older
# layout ("fp32", rounded values in floats).  The kernels widen an op's
# 16-bit parameters into float scratch and the optimizer stores each updated
# fp32 master as 16-bit bits: the same floats reach every kernel and the same
# rounding every working weight, so the two layouts must agree bit for bit,
# with no tolerance: every step's loss and gradient norm, and the saved
# checkpoints (weights, moments, 2BW's delayed version), over dp / ZeRO-1 /
# ZeRO-2 / ZeRO-3 (16-bit shards and gathers, offloaded to the host), tp x pp,
# PipeDream-2BW, bf16 and fp16, and weight gradients accumulated in 16 bits
# ("auto") and in fp32.  A resume from a 16-bit run's checkpoint continues as
# the uninterrupted run did.  Both layouts allocate exactly what memory.c
# planned, and the 16-bit one plans 2 bytes less per parameter (`weft
# check`'s model state), less the scratch.
# (rows in $lay: lib.sh's check() has a local $name, which the functions it
# runs would see)
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
small=(--set data.train="$DATA" --set model.layers=2 --set model.hidden=64 --set model.seq=64
       --set batch.global=16 --set buckets.mb=0.05 --set train.steps=4)

#      name        plan             prec dp tp pp zero grad  extra
layouts=("bf16       plans/tiny.lua   bf16 1  1  1  0    auto"
         "llama      plans/llama_tiny.lua bf16 1 1 1 0  auto"
         "dp2_z1     plans/tiny.lua   bf16 2  1  1  1    auto"
         "dp2_z2     plans/tiny.lua   fp16 2  1  1  2    fp32"
         "dp2_z3off  plans/tiny.lua   bf16 2  1  1  3    auto  offload.params=cpu offload.optimizer=cpu"
         "tp2pp2     plans/tiny.lua   bf16 1  2  2  0    auto  mesh.sp=true"
         "pp2_2bw    plans/tiny.lua   bf16 1  1  2  0    auto  pipeline.schedule=pipedream-2bw clip_grad_norm=0")
strip() { sed 's/, "ms".*//' "$1"; }  # step, loss, grad_norm, lr (not the times and bytes)
for row in "${layouts[@]}"; do
  read -r lay plan prec dp tp pp zero grad extra <<<"$row"
  sets=()
  for e in $extra; do sets+=(--set "$e"); done
  for storage in fp32 auto; do
    build_plan "${storage}_$lay" "$plan" "${small[@]}" --set precision=$prec --set mesh.dp=$dp --set mesh.tp=$tp \
      --set mesh.pp=$pp --set zero=$zero --set grad_accum=$grad --set param_storage=$storage \
      "${sets[@]}"
    "$WORK/${storage}_$lay/launch.sh" --metrics "$WORK/${storage}_$lay.jsonl" --save "$WORK/${storage}_$lay.ck" \
      >"$WORK/${storage}_$lay.log" 2>&1 </dev/null
  done
  same() {
    cmp -s <(strip "$WORK/fp32_$lay.jsonl") <(strip "$WORK/auto_$lay.jsonl") &&
      [ "$(wc -l <"$WORK/auto_$lay.jsonl")" = 4 ] &&
      "$WEFT" ckpt diff "$WORK/fp32_$lay.ck/model.safetensors" "$WORK/auto_$lay.ck/model.safetensors" >/dev/null &&
      "$WEFT" ckpt diff "$WORK/fp32_$lay.ck/optimizer.safetensors" "$WORK/auto_$lay.ck/optimizer.safetensors" \
        >/dev/null
  }
  check "$lay: 16-bit parameters give the float layout's losses, norms and checkpoints bit for bit" same
  widened() { grep -q 'wf_widen_params(c, ' "$WORK/auto_$lay"/stage*.c &&
              ! grep -q 'wf_widen_params(c, ' "$WORK/fp32_$lay"/stage*.c; }
  check "$lay: the 16-bit program widens parameters, the float one does not" widened
done

# resume: 2 steps, saved, 2 more from the checkpoint = the 4-step run
for lay in bf16 pp2_2bw; do
  d=$WORK/auto_$lay
  "$d/launch.sh" --steps 2 --save "$WORK/half_$lay.ck" >/dev/null 2>&1 </dev/null
  "$d/launch.sh" --resume "$WORK/half_$lay.ck" --metrics "$WORK/resumed_$lay.jsonl" \
    --save "$WORK/resumed_$lay.ck" >/dev/null 2>&1 </dev/null
  resumed() {
    cmp -s <(strip "$WORK/auto_$lay.jsonl" | tail -n 2) <(strip "$WORK/resumed_$lay.jsonl") &&
      "$WEFT" ckpt diff "$WORK/auto_$lay.ck/model.safetensors" "$WORK/resumed_$lay.ck/model.safetensors" >/dev/null &&
      "$WEFT" ckpt diff "$WORK/auto_$lay.ck/optimizer.safetensors" "$WORK/resumed_$lay.ck/optimizer.safetensors" \
        >/dev/null
  }
  check "$lay: a resume from a 16-bit run's checkpoint continues it bit for bit" resumed
done

# memory: planned = allocated, byte for byte (rank 0's metrics), every rank's ratio 1.000
exact_memory() {
  tail -n 1 "$WORK/$1.jsonl" | awk '{ match($0, /"mem_bytes": [0-9]+/); a = substr($0, RSTART + 13, RLENGTH - 13)
    match($0, /"mem_planned_bytes": [0-9]+/); p = substr($0, RSTART + 21, RLENGTH - 21)
    exit !(p > 0 && a == p) }' &&
    grep -q '^memory: .*largest over ranks 1\.000x' "$WORK/$1.log"
}
mem_of() { tail -n 1 "$WORK/$1.jsonl" | sed -n 's/.*"mem_bytes": \([0-9]*\).*/\1/p'; }
for row in "${layouts[@]}"; do
  read -r lay plan prec dp tp pp zero grad extra <<<"$row"
  for storage in fp32 auto; do check "${storage}_$lay: allocated as planned" exact_memory "${storage}_$lay"; done
done
# dp 1: the 16-bit arena is 2 bytes less per parameter, less the widening
# scratch (one op's parameters in floats), to the byte
field() { grep -o "\.$1 = [0-9]*L" "$WORK/auto_bf16/stage0.c" | tr -dc 0-9; }
fewer() {
  awk -v a="$(mem_of auto_bf16)" -v f="$(mem_of fp32_bf16)" -v n="$(field param_numel)" -v s="$(field wscratch_numel)" \
    'BEGIN { d = f - a; print "saved " d " B = 2 x " n " - 4 x " s "?"; exit !(n > 0 && s > 0 && d == 2 * n - 4 * s) }'
}
check "dp 1: the 16-bit layout allocates 2 B per parameter less, but one op's widened floats" fewer

# weft check: bf16 dp 1, 2 + 4 + 4 + 8 = 18 B per parameter (+ the scratch),
# with float gradients (WEFT_GRAD16=0: the 16-bit ones are grad16.sh's)
per_param() {  # per_param EXPECTED SLACK --set ...: the model state line says EXPECTED B within SLACK
  local want=$1 slack=$2
  shift 2
  WEFT_GRAD16=0 "$WEFT" check plans/tiny.lua "${small[@]}" --set precision=bf16 "$@" 2>&1 |
    awk -v w="$want" -v s="$slack" '/^model state/ { sub(/.*: /, ""); v = $1 + 0; found = 1 }
      END { print "model state " v " B"; d = v - w; exit !(found && d >= -1e-9 && d <= s) }'
}
# the scratch: the embedding's wte + wpe, (256 + 64) x 64 floats over 120,576 parameters
SCRATCH=$(awk 'BEGIN { printf "%.4f", 4 * (256 + 64) * 64 / 120576 + 0.01 }')
check "weft check: bf16 dp 1 keeps 18 B per parameter (16-bit weights) + $SCRATCH" \
  per_param 18 "$SCRATCH" --set mesh.dp=1
check "weft check: param_storage = fp32 keeps 20" per_param 20 0.005 --set mesh.dp=1 --set param_storage=fp32

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
