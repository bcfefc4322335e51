#!/usr/bin/env bash
# Layout invariance: the tiny plan under data parallelism (dp = 1, 2, 4, 8),
# with one bucket per parameter, the default bucket size and one bucket for
# everything, with gradient accumulation, under tensor parallelism (tp = 2, 4,
# with and without sequence parallelism, composed with dp, and with a
# vocabulary tp does not divide) gives the single-rank loss at every step for
# 10 steps and the single-rank final weights.
#
# Tolerance (fp32 reduction-order noise): losses within 2e-6 relative at every
# step, gradient norms within 1e-6 (Adam hides a gradient scaled by a constant;
# the norm does not); every weight within 1e-5 absolute + 5e-5 of its tensor's largest
# magnitude.  The absolute part is for the key bias of c_attn: its true
# gradient is exactly zero (softmax ignores a shift shared by all keys), so its
# fp32 gradient is pure rounding noise, which Adam's normalization turns into
# updates of up to lr; they differ by ~2e-6 between layouts.  Real errors (a
# gradient scaled wrongly, a bucket reduced twice or not at all) move weights
# by ~lr per step, 1e-3, and losses by far more than 2e-6.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
STEPS=10
LOSS_TOL=2e-6
NORM_TOL=1e-6
WEIGHT_TOL=5e-5
WEIGHT_ATOL=1e-5

common=(--set train.steps=$STEPS --set batch.global=16
        --set model.layers=2 --set model.hidden=64 --set model.seq=64)
"$WEFT" data synth -o "$WORK/v250.bin" --tokens 200000 --vocab 250 --branch 4 --seed 7 >/dev/null
# name      reference  vocab dp tp sp micro buckets.mb   (a reference has itself as reference)
layouts=(
  "ref        ref        256   1  1  0  16  25"
  "dp2        ref        256   2  1  0   8  25"
  "dp2_each   ref        256   2  1  0   8  0"
  "dp2_one    ref        256   2  1  0   8  1000"
  "dp4        ref        256   4  1  0   4  0.02"
  "dp8        ref        256   8  1  0   2  25"
  "dp2_acc4   ref        256   2  1  0   2  0.05"
  "dp1_acc4   ref        256   1  1  0   4  25"
  "dp4_acc2   ref        256   4  1  0   2  0"
  "tp2        ref        256   1  2  0  16  25"
  "tp4        ref        256   1  4  0  16  25"
  "tp2_sp     ref        256   1  2  1  16  25"
  "tp4_sp     ref        256   1  4  1   8  0"
  "dp2_tp2    ref        256   2  2  0   8  0.05"
  "dp2_tp2_sp ref        256   2  2  1   4  25"
  "ref_v250   ref_v250   250   1  1  0  16  25"
  "tp4_v250   ref_v250   250   1  4  0  16  25"
  "tp4sp_v250 ref_v250   250   1  4  1  16  0.05"
)
passed=0 failed=0
for row in "${layouts[@]}"; do
  read -r name ref vocab dp tp sp micro mb <<<"$row"
  if [ -n "${ONLY:-}" ] && [ "$name" != "$ONLY" ] && [ "$name" != "$ref" ]; then continue; fi
  data="$WORK/synth.bin"; [ "$vocab" = 256 ] || data="$WORK/v$vocab.bin"
  sp_flag=false; [ "$sp" = 1 ] && sp_flag=true
  build_plan "$name" "$PLAN" "${common[@]}" --set data.train="$data" --set model.vocab="$vocab" \
    --set mesh.dp="$dp" --set mesh.tp="$tp" --set mesh.sp=$sp_flag --set batch.micro="$micro" \
    --set buckets.mb="$mb"
  run_plan "$name" --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" >/dev/null
  [ "$name" = "$ref" ] && continue
  what="dp $dp, tp $tp, sp $sp, micro $micro, buckets $mb MiB, vocab $vocab"
  loss_msg=$(same_field loss "$WORK/$ref.jsonl" "$WORK/$name.jsonl" $LOSS_TOL) && loss_ok=1 || loss_ok=0
  norm_msg=$(same_field grad_norm "$WORK/$ref.jsonl" "$WORK/$name.jsonl" $NORM_TOL) || loss_ok=0
  w_msg=$("$WEFT" ckpt diff "$WORK/$ref.ckpt/model.safetensors" "$WORK/$name.ckpt/model.safetensors" \
          --tol $WEIGHT_TOL --atol $WEIGHT_ATOL | tail -n 1) && w_ok=1 || w_ok=0
  if [ $loss_ok = 1 ] && [ $w_ok = 1 ]; then
    passed=$((passed + 1)); echo "ok   $name ($what): $loss_msg, $norm_msg; $w_msg"
  else
    failed=$((failed + 1)); echo "FAIL $name ($what): $loss_msg, $norm_msg; $w_msg"
  fi
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
