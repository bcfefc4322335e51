#!/usr/bin/env bash
# Mixed precision (bf16 / fp16 storage emulated on the CPU, fp32 masters).
#
# fp16 loss scaling, with overflows forced by --inject-overflow:
#   - an inf on one rank of a dp 2 run (also with ZeRO-1, and of a dp 2 x
#     pp 2 run) skips that step on every rank: the weights and AdamW moments
#     after it equal those before it (checkpoints after steps 2 and 3), every
#     replica agrees (the runtime's replica check), and training continues;
#   - the scale halves on the overflow and doubles after `window` clean steps
#     (window 3, hysteresis 1: 1024 1024 1024* 512 512 512 1024 1024); with
#     hysteresis 2 the first overflow only spends the budget;
#   - the dp 2 (also ZeRO-1) and dp 2 x pp 2 runs with the injection match
#     the single-rank run with the same injection, step by step (skips,
#     scales, losses);
#   - a resume restores the masters and the scaler exactly.
# bf16 and fp16 track fp32 for 20 steps; bf16 under dp 2 (also ZeRO-1, -2, -3,
# ZeRO-3 with parameters and optimizer offloaded), tp 2 (also sequence
# parallel), pp 2 (1f1b, zb-h1), dp 2 x pp 2 with ZeRO-3, dp 2 x pp 2 zb-h1 with
# ZeRO-2 (also resumed exactly) and dp 2 x tp 2 with ZeRO-2 matches the
# single-rank bf16 run.
# 16-bit with ZeRO-3: an fp16 overflow on one rank, which holds only its shard
# of the gradients and masters, skips the step on every rank (the gathered
# masters and moments do not move) and matches the single-rank run; a resumed
# bf16 ZeRO-3 run is byte-identical (the checkpoint holds the fp32 masters).
#
# Tolerances.  16-bit storage rounds every activation and gradient to 8 (bf16)
# or 11 (fp16) significant bits; the runs differ from fp32 (and layouts from
# each other, since sums happen in another order before rounding) by that
# noise, which Adam then carries into the weights.  Measured worst relative
# differences on this model: losses bf16 vs fp32 1.3e-4 over 20 steps (grad
# norms 2.2e-3), fp16 vs fp32 1.2e-5 (4.2e-4); bf16 layouts vs one rank
# <= 1.6e-5 over 10 steps (grad norms <= 1.2e-3; the ZeRO rows equal the
# plain dp 2 run's numbers); fp16 dp 2, dp 2 x pp 2 and ZeRO-3 with the
# injection <= 1.4e-6.  The loss and norm tolerances allow some 7x over that;
# a missed unscale, for one, puts the fp16 gradient norm off by the scale
# and the losses by 4e-4.
# bf16 layouts' final weights (derived, lib.sh's storage_noise and adam_reach):
#   - every tensor: ||a - b|| <= (sqrt(T N / 3) u + T K 2^-24) ||a - a0||, a0
#     the common initial weights, u = 2^-8, T = 10 steps, N the 16-bit
#     roundings on a value's path in one step of both runs (rounding_sites:
#     the stage programs' rounding calls plus the weight gradient's
#     microbatches; 66 for dp 2, 71 for pp 2, 96 for tp 2): each rounding errs
#     by a mean square of at most u^2/3, independent roundings add, and the
#     norm ratio averages over the tensor's elements; the second term is the
#     fp32 reordering of K = 16 x 64 tokens (equivalence.sh).  5.8e-2 to
#     7.1e-2 of the updates here;
#   - every element: |a - b| <= 2 sum_t lr_t B_t (1.7e-2), all AdamW can move
#     an element (adam_reach); the c_attn key bias (elements C..2C-1 of each
#     h.N.attn.c_attn.bias, zero gradient in exact arithmetic: softmax ignores
#     a shift shared by all keys) is held to that alone: its bf16 gradient is
#     pure rounding noise that AdamW turns into whole steps.
# Measured: ||a-b||/||a-a0|| 6.4e-3 (dp 2) to 1.6e-2 (dp 2 x tp 2, ln_2.bias
# of 64 elements), max|a-b| <= 6.9e-3.  A sequence-parallel gradient sum
# skipped (ln_f.weight's) puts ln_f.weight 0.22 of its updates off.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
BF16_VS_FP32_TOL=1e-3    # losses, relative, worst step of 20
FP16_VS_FP32_TOL=1e-4
VS_FP32_NORM_TOL=2e-2    # gradient norms, relative
LAYOUT_TOL=1e-4          # bf16 layouts: losses
LAYOUT_NORM_TOL=1e-2     #   gradient norms
FP16_LAYOUT_TOL=2e-5     # fp16 dp 2 / dp 2 x pp 2 with the injection: losses

small=(--set data.train="$DATA" --set model.layers=2 --set model.hidden=64 --set model.seq=64
       --set batch.global=16 --set buckets.mb=0.05)
field() {  # field NAME FILE: the values of NAME, one per line
  sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$2"
}
differs() { ! cmp -s "$1" "$2"; }

# ---- fp16: overflow skipping and the dynamic scale ------------------------------
fp16=(--set precision=fp16 --set loss_scale.initial=1024 --set loss_scale.window=3
      --set loss_scale.hysteresis=1 --set train.steps=8)
build_plan f_ref "$PLAN" "${small[@]}" "${fp16[@]}" --set mesh.dp=1 --set batch.micro=16
build_plan f_dp2 "$PLAN" "${small[@]}" "${fp16[@]}" --set mesh.dp=2 --set batch.micro=8
build_plan f_dp2z1 "$PLAN" "${small[@]}" "${fp16[@]}" --set mesh.dp=2 --set zero=1 --set batch.micro=8
build_plan f_dp2pp2 "$PLAN" "${small[@]}" "${fp16[@]}" --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=4
build_plan f_dp2z3 "$PLAN" "${small[@]}" "${fp16[@]}" --set mesh.dp=2 --set zero=3 --set batch.micro=8
run_plan f_ref --inject-overflow 3:0 --metrics "$WORK/f_ref.jsonl" >/dev/null
run_plan f_dp2 --inject-overflow 3:1 --metrics "$WORK/f_dp2.jsonl" --save "$WORK/f_dp2_8" >/dev/null
run_plan f_dp2 --inject-overflow 3:1 --steps 2 --save "$WORK/f_dp2_2" >/dev/null
run_plan f_dp2 --inject-overflow 3:1 --steps 3 --save "$WORK/f_dp2_3" >/dev/null
# rank 3 is dp rank 1 of the last stage: the overflow must reach stage 0 too
run_plan f_dp2pp2 --inject-overflow 3:3 --metrics "$WORK/f_dp2pp2.jsonl" >/dev/null
# ZeRO-1: rank 1 checks (and here overflows in) only its shard of the gradients
run_plan f_dp2z1 --inject-overflow 3:1 --metrics "$WORK/f_dp2z1.jsonl" >/dev/null
# ZeRO-3: rank 1 holds only its shard of the gradients and of the masters
run_plan f_dp2z3 --inject-overflow 3:1 --metrics "$WORK/f_dp2z3.jsonl" >/dev/null
run_plan f_dp2z3 --inject-overflow 3:1 --steps 2 --save "$WORK/f_dp2z3_2" >/dev/null
run_plan f_dp2z3 --inject-overflow 3:1 --steps 3 --save "$WORK/f_dp2z3_3" >/dev/null

check "fp16 dp 2: only step 3 is skipped" \
  test "$(field skipped "$WORK/f_dp2.jsonl" | tr '\n' ' ')" = "false false true false false false false false "
check "fp16 dp 2: the scale halves on the overflow and doubles after 3 clean steps" \
  test "$(field loss_scale "$WORK/f_dp2.jsonl" | tr '\n' ' ')" = "1024 1024 1024 512 512 512 1024 1024 "
check "fp16 dp 2: the skipped step reports no gradient norm" \
  test "$(field grad_norm "$WORK/f_dp2.jsonl" | sed -n 3p)" = null
check "fp16 dp 2: weights after the skipped step equal those before it" \
  "$WEFT" ckpt diff "$WORK/f_dp2_2/model.safetensors" "$WORK/f_dp2_3/model.safetensors"
check "fp16 dp 2: AdamW moments after the skipped step equal those before it" \
  "$WEFT" ckpt diff "$WORK/f_dp2_2/optimizer.safetensors" "$WORK/f_dp2_3/optimizer.safetensors"
check "fp16 dp 2: the step after the skip updates the weights" \
  bash -c "! '$WEFT' ckpt diff '$WORK/f_dp2_3/model.safetensors' '$WORK/f_dp2_8/model.safetensors' >/dev/null"
check "fp16 dp 2: training continues (loss falls from step 1 to step 8)" \
  awk -v a="$(field loss "$WORK/f_dp2.jsonl" | head -1)" -v b="$(field loss "$WORK/f_dp2.jsonl" | tail -1)" \
  'BEGIN { exit !(b < a) }'
check "fp16 dp 2 ZeRO-3: weights after the skipped step equal those before it" \
  "$WEFT" ckpt diff "$WORK/f_dp2z3_2/model.safetensors" "$WORK/f_dp2z3_3/model.safetensors"
check "fp16 dp 2 ZeRO-3: AdamW moments after the skipped step equal those before it" \
  "$WEFT" ckpt diff "$WORK/f_dp2z3_2/optimizer.safetensors" "$WORK/f_dp2z3_3/optimizer.safetensors"
for run in f_dp2 f_dp2z1 f_dp2pp2 f_dp2z3; do
  check "fp16 $run: skips and scales equal the single-rank run's" \
    cmp -s <(field loss_scale "$WORK/f_ref.jsonl"; field skipped "$WORK/f_ref.jsonl") \
           <(field loss_scale "$WORK/$run.jsonl"; field skipped "$WORK/$run.jsonl")
  msg=$(same_field loss "$WORK/f_ref.jsonl" "$WORK/$run.jsonl" $FP16_LAYOUT_TOL) && ok=0 || ok=1
  check "fp16 $run with the injection tracks the single-rank run with it: $msg" test $ok = 0
done

# hysteresis 2 (DeepSpeed's default): the first overflow keeps the scale
# and spends the budget, the next one halves it.
build_plan f_hyst "$PLAN" "${small[@]}" --set precision=fp16 --set loss_scale.initial=1024 \
  --set loss_scale.hysteresis=2 --set train.steps=5 --set mesh.dp=1 --set batch.micro=16
run_plan f_hyst --inject-overflow 2 --inject-overflow 4 --metrics "$WORK/f_hyst.jsonl" >/dev/null
check "fp16 hysteresis 2: scales 1024 1024 1024 1024 512, steps 2 and 4 skipped" \
  test "$(field loss_scale "$WORK/f_hyst.jsonl" | tr '\n' ' ')$(field skipped "$WORK/f_hyst.jsonl" | tr '\n' ' ')" \
       = "1024 1024 1024 1024 512 false true false true false "

# Resume after the overflow: masters, moments and the scaler come back exactly.
run_plan f_dp2 --inject-overflow 3:1 --steps 5 --save "$WORK/f_dp2_5" >/dev/null
run_plan f_dp2 --resume "$WORK/f_dp2_5" --metrics "$WORK/f_resumed.jsonl" --save "$WORK/f_resumed" >/dev/null
check "fp16 resume after an overflow: weights byte-identical to the straight run" \
  "$WEFT" ckpt diff "$WORK/f_dp2_8/model.safetensors" "$WORK/f_resumed/model.safetensors"
check "fp16 resume: same losses and scales at steps 6..8" \
  cmp -s <(tail -n 3 "$WORK/f_dp2.jsonl" | sed -e 's/, "ms": [^,]*//' -e 's/, "tokens_per_s".*}/}/') \
         <(sed -e 's/, "ms": [^,]*//' -e 's/, "tokens_per_s".*}/}/' "$WORK/f_resumed.jsonl")

# ---- bf16 and fp16 track fp32 ---------------------------------------------------------
for prec in fp32 bf16 fp16; do
  build_plan "t_$prec" "$PLAN" "${small[@]}" --set precision=$prec --set train.steps=20 \
    --set mesh.dp=1 --set batch.micro=16
  run_plan "t_$prec" --metrics "$WORK/t_$prec.jsonl" >/dev/null
done
for prec in bf16 fp16; do
  tol=$BF16_VS_FP32_TOL; [ $prec = fp16 ] && tol=$FP16_VS_FP32_TOL
  msg=$(same_field loss "$WORK/t_fp32.jsonl" "$WORK/t_$prec.jsonl" $tol) && ok=0 || ok=1
  nmsg=$(same_field grad_norm "$WORK/t_fp32.jsonl" "$WORK/t_$prec.jsonl" $VS_FP32_NORM_TOL) || ok=1
  check "$prec tracks fp32 for 20 steps (tolerance $tol): $msg, $nmsg" test $ok = 0
  check "$prec differs from fp32 (16-bit storage is in effect)" \
    differs <(field loss "$WORK/t_fp32.jsonl") <(field loss "$WORK/t_$prec.jsonl")
done
# (activations and their gradients are 16-bit storage: the kernel rounds
# them as it stores them, where the program says so; emit_ops.c)
for what in "a + A_H0_LN_1" "a + A_H0_ATTN_C_ATTN" "d + D_A_H0_LN_1" "g + P_H0_ATTN_C_ATTN_WEIGHT" "g + P_WTE_WEIGHT"; do
  for p in bf16 fp16; do
    check "the $p program rounds $what to $p" \
      grep -q "wf_to_$p(c, $what,\|/\* $what: stored rounded to $p \*/" "$WORK/t_$p/stage0.c"
  done
done
check "the fp32 program rounds nothing" bash -c "! grep -q 'wf_to_\|precision' '$WORK/t_fp32/stage0.c'"
check "fp16 never overflowed at the default scale" \
  test "$(field skipped_total "$WORK/t_fp16.jsonl" | tail -1)" = 0

# ---- bf16 layouts against the single-rank bf16 run -------------------------------
bf=(--set precision=bf16 --set train.steps=10 --set model.layers=2)
build_plan b_ref "$PLAN" "${small[@]}" "${bf[@]}" --set mesh.dp=1 --set batch.micro=16
run_plan b_ref --metrics "$WORK/b_ref.jsonl" --save "$WORK/b_ref.ckpt" >/dev/null
run_plan b_ref --steps 0 --save "$WORK/b_ref.init" >/dev/null
# the weight bounds (header); K: tokens per step, C: the hidden size
if [ -z "${WEFT_SNAPSHOT:-}" ]; then
  REACH=$(adam_reach "$WORK/b_ref/stage0.c" "$WORK/b_ref.jsonl")
  REF_SITES=$(rounding_sites "$WORK/b_ref")
fi
K=$((16 * 64)) C=64 BF16_U=$(awk 'BEGIN { print 2 ^ -8 }')
# name     dp tp pp micro zero sp    schedule [offload: params and optimizer on the host]
layouts=(
  "dp2       2  1  1  8    0    false 1f1b"
  "dp2_z1    2  1  1  8    1    false 1f1b"
  "tp2       1  2  1  16   0    false 1f1b"
  "tp2_sp    1  2  1  16   0    true  1f1b"
  "pp2       1  1  2  4    0    false 1f1b"
  "pp2_zbh1  1  1  2  4    0    false zb-h1"
  "dp2_z2    2  1  1  8    2    false 1f1b"
  "dp2_z3    2  1  1  8    3    false 1f1b"
  "dp2_z3off 2  1  1  8    3    false 1f1b  cpu"
  "dp2pp2_z3 2  1  2  4    3    false 1f1b"
  "dp2pp2_z2zb 2 1 2  4    2    false zb-h1"
  "dp2pp2_z3zb 2 1 2  4    3    false zb-h1"
  "dp2tp2_z2 2  2  1  8    2    true  1f1b"
)
for row in "${layouts[@]}"; do
  read -r name dp tp pp micro zero sp sched off <<<"$row"
  build_plan "b_$name" "$PLAN" "${small[@]}" "${bf[@]}" --set mesh.dp=$dp --set mesh.tp=$tp \
    --set mesh.pp=$pp --set batch.micro=$micro --set zero=$zero --set mesh.sp=$sp \
    --set pipeline.schedule=$sched --set offload.params=${off:-none} --set offload.optimizer=${off:-none}
  run_plan "b_$name" --metrics "$WORK/b_$name.jsonl" --save "$WORK/b_$name.ckpt" >/dev/null
  msg=$(same_field loss "$WORK/b_ref.jsonl" "$WORK/b_$name.jsonl" $LAYOUT_TOL) && ok=0 || ok=1
  nmsg=$(same_field grad_norm "$WORK/b_ref.jsonl" "$WORK/b_$name.jsonl" $LAYOUT_NORM_TOL) || ok=1
  [ -z "${WEFT_SNAPSHOT:-}" ] || continue
  wtol=$(awk -v s="$(storage_noise 10 "$BF16_U" "$REF_SITES" "$(rounding_sites "$WORK/b_$name")")" \
         -v r="$(reduction_noise 10 $K)" 'BEGIN { printf "%.3e", s + r }')
  wmsg=$("$WEFT" ckpt diff "$WORK/b_ref.ckpt/model.safetensors" "$WORK/b_$name.ckpt/model.safetensors" \
         --norm-tol "$wtol" --from "$WORK/b_ref.init/model.safetensors" --bound "$REACH" \
         --noise "h.*.attn.c_attn.bias:$C:$((2 * C))" | tail -n 1) || ok=1
  check "bf16 $name matches the single-rank bf16 run: $msg, $nmsg; weights (norm tol $wtol, bound $REACH): $wmsg" \
    test $ok = 0
done

# ZeRO-2 under zb-h1 resumes exactly too: every W reduce-scatters its buckets
# into the float shard, so nothing of a step is left in the bucket buffers.
run_plan b_dp2pp2_z2zb --steps 5 --save "$WORK/b_z2zb_5" >/dev/null
run_plan b_dp2pp2_z2zb --resume "$WORK/b_z2zb_5" --save "$WORK/b_z2zb_resumed" >/dev/null
check "bf16 ZeRO-2 zb-h1 resume: weights and AdamW moments byte-identical to the straight run" \
  eval '"$WEFT" ckpt diff "$WORK/b_dp2pp2_z2zb.ckpt/model.safetensors" "$WORK/b_z2zb_resumed/model.safetensors" &&
        "$WEFT" ckpt diff "$WORK/b_dp2pp2_z2zb.ckpt/optimizer.safetensors" "$WORK/b_z2zb_resumed/optimizer.safetensors"'

# A resumed bf16 ZeRO-3 run is exact: the checkpoint carries the fp32 masters
# (each rank's shard, gathered), not just the rounded bf16 weights.
run_plan b_dp2_z3 --steps 5 --save "$WORK/b_dp2_z3_5" >/dev/null
run_plan b_dp2_z3 --resume "$WORK/b_dp2_z3_5" --metrics "$WORK/b_z3_resumed.jsonl" \
  --save "$WORK/b_z3_resumed" >/dev/null
check "bf16 ZeRO-3 resume: weights (the fp32 masters) byte-identical to the straight run" \
  "$WEFT" ckpt diff "$WORK/b_dp2_z3.ckpt/model.safetensors" "$WORK/b_z3_resumed/model.safetensors"
check "bf16 ZeRO-3 resume: AdamW moments byte-identical to the straight run" \
  "$WEFT" ckpt diff "$WORK/b_dp2_z3.ckpt/optimizer.safetensors" "$WORK/b_z3_resumed/optimizer.safetensors"
check "bf16 ZeRO-3 resume: same losses at steps 6..10" \
  cmp -s <(tail -n 5 "$WORK/b_dp2_z3.jsonl" | sed -e 's/, "ms": [^,]*//' -e 's/, "tokens_per_s".*}/}/') \
         <(sed -e 's/, "ms": [^,]*//' -e 's/, "tokens_per_s".*}/}/' "$WORK/b_z3_resumed.jsonl")

echo "$passed passed, $failed failed"
[ $failed = 0 ]
