#!/usr/bin/env bash
# grad16: the weight gradients of a bf16 / fp16 plan that accumulates them in
# that type (plan.grad_accum "auto") stored in 2 bytes on the CPU backend
# (compiler/grad16.c, runtime/common/grad16.c) against the float arena of
# rounded values (WEFT_GRAD16=0 in the compiler's environment).  The kernels
# accumulate into an op's gradients widened to floats, stored back rounded
# (the rounding the float program did in place); the data-parallel sums and
# the tp / tied sums after them run on the same floats in the same order,
# rounded once as before.  So there is no tolerance: every step's loss and
# gradient norm and the saved checkpoints (weights, moments) agree bit for
# bit, over dp 2 (ZeRO-1 with tp 2 and sequence parallelism, ZeRO-1 over
# pp 2 whose tied wte's part stays in floats for its sum between the ends,
# ZeRO-2 fp16 with loss scaling, offloaded), ZeRO-1 over dp 3 with tp 2 and
# sp (the ranks' float parts of different sizes, each moved from the
# bucket's start to its place), tp 2 x pp 2 with sp (tied wte, tp partial
# sums, dp 1), dp 2 x pp 2 (buckets in flight one at a time; the tied wte's
# bucket summed after the dp sum), ZeRO-2 under zb-h1 with one bucket per
# parameter (the LM head's 16-bit bucket buffer reduced in B, sharing memory
# with W's), PipeDream-2BW on pp 2 (its tied wte sent
# as floats); and with 16-bit dp sums (plan.dp_comm; the "c16" rows: the
# stored bits are the message, every bucket in flight at once, no staging:
# dp 2 x pp 2 whose tied wte is summed on floats after its 16-bit dp sum,
# ZeRO-1 with tp 2 and sp, ZeRO-1 fp16 over dp 3 with one parameter a bucket
# (each padded to 3 equal parts, ranks 1 and 2 moving theirs from the
# bucket's start under MPI; a loss scale of 2^21 that overflows steps 1 and
# 2, skipped on the moved bits), ZeRO-3 fp16, whose gradients take
# ZeRO-2's path); ZeRO-1 over dp 3 at 8 microbatches a step with one
# parameter a bucket (each part rounded into place once, at the last
# microbatch) and clipping at 0.1 (the norm of own parts, about 0.8); ZeRO-3 with frozen
# parameters (vlm_tiny's vision encoder; no gradient, no bucket) and ZeRO-1
# with its language model frozen; PipeDream-2BW over dp 2 with 16-bit dp sums
# (its tied wte's gradient sent as floats after them) and with fp32 dp sums
# (the tied wte's bucket summed in the staging and kept there, unrounded,
# through the exchange), and under ZeRO-1 (fp32 and 16-bit dp sums, each
# bucket reduce-scattered in place and this rank's part rounded, or moved,
# into the arena at once; the tied wte's float part sent and added, rounded
# with the other float parts by the step) and
# ZeRO-2 (16-bit bucket buffers, the float shard as without 2BW); a resume continues a 16-bit run bit for
# bit.  Both layouts allocate
# exactly what memory.c planned; the 16-bit arena is half the float one.
# (rows in $lay: lib.sh's check() has a local $name)
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
small=(--set data.train="$DATA" --set model.layers=2 --set model.hidden=64 --set model.seq=64
       --set batch.global=16 --set buckets.mb=0.05 --set train.steps=4)
# rows marked "vlm": plans/vlm_tiny.lua, whose freeze leaves parameters
# without gradients (in no bucket, past the gradient arena)
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq 24 --count 512 --seed 5 >/dev/null
vlm=(--set data.train="$WORK/vlm.bin" --set batch.global=16 --set batch.micro=8 --set train.steps=4
     --set optimizer.weight_decay=0.1)

#      name      prec dp tp pp zero extra
layouts=("bf16    bf16 1  1  1  0"
         "dp2pp2  bf16 2  1  2  0"
         "pp2_2bw bf16 1  1  2  0    pipeline.schedule=pipedream-2bw clip_grad_norm=0"
         "tp2pp2  bf16 1  2  2  0    mesh.sp=true"
         "z1tp2   bf16 2  2  1  1    mesh.sp=true"
         "z1pp2   bf16 2  1  2  1"
         "z1dp3sp bf16 3  2  1  1    mesh.sp=true batch.global=24 batch.micro=4"
         "z2fp16  fp16 2  1  1  2    offload.optimizer=cpu"
         "dp2pp2c16 bf16 2 1  2  0    dp_comm=bf16"
         "zb_z2   bf16 2  1  2  2    pipeline.schedule=zb-h1 batch.micro=2 buckets.mb=0"
         "z1c16   bf16 2  2  1  1    mesh.sp=true dp_comm=bf16"
         "z1dp3c16fp16 fp16 3 1 1 1   dp_comm=fp16 batch.global=24 buckets.mb=0 loss_scale.initial=2097152 loss_scale.hysteresis=1"
         "z1dp3m8 bf16  3  1  1  1    batch.global=24 batch.micro=1 buckets.mb=0 clip_grad_norm=0.1"
         "z3c16   fp16 2  1  1  3    dp_comm=fp16"
         "fzv_z3  bf16 2  1  1  3    vlm model.freeze.vision=true buckets.mb=0.02"
         "fzl_z1  bf16 2  1  1  1    vlm model.freeze.llm=true"
         "2bw_dp2c16 bf16 2 1 2  0    pipeline.schedule=pipedream-2bw clip_grad_norm=0 dp_comm=bf16 batch.micro=4"
         "2bw_dp2 bf16 2  1  2  0    pipeline.schedule=pipedream-2bw clip_grad_norm=0 batch.micro=4"
         "2bw_z1  bf16 2  1  2  1    pipeline.schedule=pipedream-2bw clip_grad_norm=0 batch.micro=4"
         "2bw_z1c16 bf16 2 1 2  1    pipeline.schedule=pipedream-2bw clip_grad_norm=0 dp_comm=bf16 batch.micro=4"
         "2bw_z2  bf16 2  1  2  2    pipeline.schedule=pipedream-2bw clip_grad_norm=0 batch.micro=4")
strip() { sed 's/, "ms".*//' "$1"; }  # step, loss, grad_norm, lr (not the times and bytes)
for row in "${layouts[@]}"; do
  read -r lay prec dp tp pp zero extra <<<"$row"
  sets=() plan=plans/tiny.lua base=("${small[@]}")
  for e in $extra; do
    if [ "$e" = vlm ]; then plan=plans/vlm_tiny.lua base=("${vlm[@]}"); else sets+=(--set "$e"); fi
  done
  for form in f32 g16; do
    # WEFT_GRAD16=1: 16 bits even where these small layouts' scratch and
    # staging outweigh the 2 bytes saved (grad16.c's rule would keep floats)
    if [ $form = f32 ]; then export WEFT_GRAD16=0; else export WEFT_GRAD16=1; fi
    build_plan "${form}_$lay" "$plan" "${base[@]}" --set precision=$prec --set mesh.dp=$dp \
      --set mesh.tp=$tp --set mesh.pp=$pp --set zero=$zero "${sets[@]}"
    unset WEFT_GRAD16
    "$WORK/${form}_$lay/launch.sh" --metrics "$WORK/${form}_$lay.jsonl" --save "$WORK/${form}_$lay.ck" \
      >"$WORK/${form}_$lay.log" 2>&1 </dev/null
  done
  same() {
    cmp -s <(strip "$WORK/f32_$lay.jsonl") <(strip "$WORK/g16_$lay.jsonl") &&
      [ "$(wc -l <"$WORK/g16_$lay.jsonl")" = 4 ] &&
      "$WEFT" ckpt diff "$WORK/f32_$lay.ck/model.safetensors" "$WORK/g16_$lay.ck/model.safetensors" >/dev/null &&
      "$WEFT" ckpt diff "$WORK/f32_$lay.ck/optimizer.safetensors" "$WORK/g16_$lay.ck/optimizer.safetensors" \
        >/dev/null
  }
  check "$lay: 16-bit gradients give the float arena's losses, norms and checkpoints bit for bit" same
  forms() { grep -q '\.grad16 = 1' "$WORK/g16_$lay"/stage0.c && grep -q 'wf_narrow_grads(c, ' "$WORK/g16_$lay"/stage0.c &&
            ! grep -q 'grad16\|wf_narrow_grads' "$WORK/f32_$lay"/stage*.c; }
  check "$lay: the 16-bit program stores 16-bit gradients, the float one does not" forms
done

# z1dp3c16fp16 proves the overflow check on moved bits only if it both
# skipped steps (a null norm) and took some
skipped_and_taken() { grep -q '"grad_norm": null' "$1" && grep -q '"grad_norm": [0-9]' "$1"; }
check "z1dp3c16fp16: the loss scale overflowed on some steps and not on others" \
  skipped_and_taken "$WORK/g16_z1dp3c16fp16.jsonl"

# resume: 2 steps, saved, 2 more from the checkpoint = the 4-step run
lay=dp2pp2
"$WORK/g16_$lay/launch.sh" --steps 2 --save "$WORK/half.ck" >/dev/null 2>&1 </dev/null
"$WORK/g16_$lay/launch.sh" --resume "$WORK/half.ck" --metrics "$WORK/resumed.jsonl" --save "$WORK/resumed.ck" \
  >/dev/null 2>&1 </dev/null
resumed() {
  cmp -s <(strip "$WORK/g16_$lay.jsonl" | tail -n 2) <(strip "$WORK/resumed.jsonl") &&
    "$WEFT" ckpt diff "$WORK/g16_$lay.ck/model.safetensors" "$WORK/resumed.ck/model.safetensors" >/dev/null &&
    "$WEFT" ckpt diff "$WORK/g16_$lay.ck/optimizer.safetensors" "$WORK/resumed.ck/optimizer.safetensors" >/dev/null
}
check "$lay: a resume from a 16-bit run's checkpoint continues it bit for bit" resumed

# memory: planned = allocated, byte for byte (rank 0's metrics), and on every
# rank (the log's "every rank to the byte": ZeRO-1's float parts differ
# between dp ranks, z1dp3sp's 4288, 384 and 320 floats, and each rank
# allocates the most, as planned)
exact_memory() {
  tail -n 1 "$WORK/$1.jsonl" | awk '{ match($0, /"mem_bytes": [0-9]+/); a = substr($0, RSTART + 13, RLENGTH - 13)
    match($0, /"mem_planned_bytes": [0-9]+/); p = substr($0, RSTART + 21, RLENGTH - 21)
    exit !(p > 0 && a == p) }' &&
    grep -q '^memory: .*largest over ranks 1\.000x, every rank to the byte)' "$WORK/$1.log"
}
mem_of() { tail -n 1 "$WORK/$1.jsonl" | sed -n 's/.*"mem_bytes": \([0-9]*\).*/\1/p'; }
for row in "${layouts[@]}"; do
  read -r lay prec dp tp pp zero extra <<<"$row"
  for form in f32 g16; do check "${form}_$lay: allocated as planned" exact_memory "${form}_$lay"; done
done
# dp 1: the 16-bit arena is 2 bytes less per gradient, less the widening
# scratch (one op's gradients in floats) and the staging (none to sum at dp 1
# on one stage: wf_alloc's 64 bytes), to the byte
field() { grep -o "\.$1 = [0-9]*L" "$WORK/g16_bf16/stage0.c" | tr -dc 0-9; }
fewer() {
  awk -v a="$(mem_of g16_bf16)" -v f="$(mem_of f32_bf16)" -v n="$(field grad_numel)" -v s="$(field gscratch_numel)" \
    -v t="$(field gstage_numel)" \
    'BEGIN { st = 4 * t > 0 ? 4 * t : 64; d = f - a
             print "saved " d " B = 2 x " n " - 4 x " s " - " st "?"
             exit !(n > 0 && s > 0 && t == 0 && d == 2 * n - 4 * s - st) }'
}
check "dp 1: 16-bit gradients allocate 2 B per gradient less, but one op's widened floats" fewer

# 16-bit dp sums: the float program packs each bucket through dp_comm.c's
# staging (dp16_numel); the 16-bit one sends its bits and stages nothing
# (ZeRO's float shard holds the sums after the dp sum; ZeRO-0 stages only
# the tied wte, one parameter, not its whole bucket)
staged() { grep -o "\.$1 = [0-9]*L" "$WORK/$2"/stage0.c | sed 's/.* = \([0-9]*\)L/\1/'; }
no_staging() {
  local f=$(staged dp16_numel "f32_$1") g=$(staged dp16_numel "g16_$1") s=$(staged gstage_numel "g16_$1")
  echo "$1: float packing staging $f, 16-bit: packing ${g:-none}, sums' staging $s (want ${2})"
  [ "${f:-0}" -gt 0 ] && [ "${g:-0}" = 0 ] && [ "$s" = "$2" ]
}
wte=$(awk 'BEGIN { printf "%d", int((256 * 64 + 15) / 16) * 16 }')  # tiny's wte, vocab 256 x hidden 64
check "z1c16: 16-bit dp sums need no float staging" no_staging z1c16 0
check "z3c16: 16-bit dp sums need no float staging" no_staging z3c16 0
check "dp2pp2c16: 16-bit dp sums stage only the tied wte ($wte floats)" no_staging dp2pp2c16 "$wte"

# weft check: bf16 dp 1, gradients about 2 B per parameter (plus the
# scratch: one op's gradients in floats; tiny's embedding, (256 + 64) x 64
# floats over 120,576 parameters), 4 with WEFT_GRAD16=0
grads_per_param() {  # grads_per_param LOW HIGH --set ...: check's gradient bytes per parameter in [LOW, HIGH]
  local lo=$1 hi=$2
  shift 2
  "$WEFT" check plans/tiny.lua "${small[@]}" --set precision=bf16 "$@" 2>&1 |
    awk -v lo="$lo" -v hi="$hi" '/^model state/ { match($0, /gradients [0-9.]+/); v = substr($0, RSTART + 10, RLENGTH - 10) + 0; found = 1 }
      END { print "gradients " v " B per parameter"; exit !(found && v >= lo && v <= hi) }'
}
HIGH=$(awk 'BEGIN { printf "%.4f", 2 + 4 * (256 + 64) * 64 / 120576 + 0.01 }')
check "weft check: bf16 dp 1 keeps 2 B of gradient per parameter (+ one op's widened, <= $HIGH)" \
  grads_per_param 2 "$HIGH" --set mesh.dp=1
# dp 2 with 16-bit dp sums: no staging for them, so dp 1's figure (before:
# 4, float gradients wherever dp_comm was 16-bit)
check "weft check: bf16 dp 2 with dp_comm = bf16 keeps 2 B per parameter (+ one op's widened, <= $HIGH)" \
  grads_per_param 2 "$HIGH" --set mesh.dp=2 --set dp_comm=bf16
float_grads() { WEFT_GRAD16=0 grads_per_param 3.999 4.001 --set mesh.dp=1; }
check "weft check: WEFT_GRAD16=0 keeps 4" float_grads
check "weft check: grad_accum = fp32 keeps 4" grads_per_param 3.999 4.001 --set mesh.dp=1 --set grad_accum=fp32

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
