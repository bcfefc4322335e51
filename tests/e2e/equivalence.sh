#!/usr/bin/env bash
# Layout invariance: the tiny plan under data parallelism (dp = 1, 2, 4, 8),
# with one bucket per parameter, the default bucket size and one bucket for
# everything, and with gradient accumulation, gives the dp = 1 loss at every
# step for 10 steps and the dp = 1 final weights.
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

common=(--set train.steps=$STEPS --set batch.global=16 --set data.train="$DATA"
        --set model.layers=2 --set model.hidden=64 --set model.seq=64)
# name   dp micro buckets.mb
layouts=(
  "ref       1 16 25"
  "dp2       2  8 25"
  "dp2_each  2  8 0"
  "dp2_one   2  8 1000"
  "dp4       4  4 0.02"
  "dp8       8  2 25"
  "dp2_acc4  2  2 0.05"
  "dp1_acc4  1  4 25"
  "dp4_acc2  4  2 0"
)
passed=0 failed=0
for row in "${layouts[@]}"; do
  read -r name dp micro mb <<<"$row"
  build_plan "$name" "$PLAN" "${common[@]}" --set mesh.dp="$dp" --set batch.micro="$micro" \
    --set buckets.mb="$mb"
  run_plan "$name" --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" >/dev/null
  if [ "$name" = ref ]; then continue; fi
  [ -z "${ONLY:-}" ] || [ "$name" = "$ONLY" ] || continue
  loss_msg=$(same_field loss "$WORK/ref.jsonl" "$WORK/$name.jsonl" $LOSS_TOL) && loss_ok=1 || loss_ok=0
  norm_msg=$(same_field grad_norm "$WORK/ref.jsonl" "$WORK/$name.jsonl" $NORM_TOL) || loss_ok=0
  loss_msg="$loss_msg, $norm_msg"
  w_msg=$("$WEFT" ckpt diff "$WORK/ref.ckpt/model.safetensors" "$WORK/$name.ckpt/model.safetensors" \
          --tol $WEIGHT_TOL --atol $WEIGHT_ATOL | tail -n 1) && w_ok=1 || w_ok=0
  if [ $loss_ok = 1 ] && [ $w_ok = 1 ]; then
    passed=$((passed + 1)); echo "ok   $name (dp $dp, micro $micro, buckets $mb MiB): $loss_msg; $w_msg"
  else
    failed=$((failed + 1)); echo "FAIL $name (dp $dp, micro $micro, buckets $mb MiB): $loss_msg; $w_msg"
  fi
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
