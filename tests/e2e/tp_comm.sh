#!/usr/bin/env bash
# Tensor-parallel messages in the activation dtype (plan.tp_comm;
# runtime/common/tp.c, compiler/wire.c) on the CPU backend, whose float
# activations tp.c packs into 16 bits around each collective.
#
# Derived, not measured:
#   - tp 2 (bf16, fp16; with sequence parallelism too): every sum has two
#     terms, and 16-bit messages add them as round(a + b) in fp32, which is
#     what the fp32 path rounds once after its sum; each collective's input
#     gradient starts at zero (its input has no other reader), so adding the
#     rounded sum into it rounds nothing more.  The 16-bit run and the
#     tp_comm = "fp32" run must be bit-identical: losses, gradient norms and
#     final weights.  A wrong packing, a truncating sum or a value moved to
#     the wrong rank breaks it.
#   - tp 4: a 16-bit sum of four terms rounds three times where the fp32 one
#     rounds once, two more roundings per collective on a path that already
#     rounds after each of a block's ~10 ops, so the two runs must differ
#     (the 16-bit path is in effect) by the noise of precision.sh's bf16
#     layouts: losses within its LAYOUT_TOL 1e-4, gradient norms within
#     LAYOUT_NORM_TOL 1e-2 (measured here: 1e-5 and 1e-3 at most).
#   - the generated program asks for 16-bit messages (.tp_comm16 = 1) under
#     bf16 / fp16 by default and not with tp_comm = "fp32" or in fp32 plans.
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
LAYOUT_TOL=1e-4
LAYOUT_NORM_TOL=1e-2
small=(--set data.train="$DATA" --set model.layers=2 --set model.hidden=64 --set model.seq=64
       --set batch.global=8 --set batch.micro=8 --set mesh.dp=1 --set train.steps=5)
# name   precision tp sp
rows=(
  "bf16_tp2 bf16 2 false"
  "bf16_sp2 bf16 2 true"
  "fp16_tp2 fp16 2 false"
  "bf16_tp4 bf16 4 false"
)
for row in "${rows[@]}"; do
  read -r name prec tp sp <<<"$row"
  for tc in auto fp32; do
    build_plan "${name}_$tc" plans/tiny.lua "${small[@]}" --set precision=$prec --set mesh.tp=$tp \
      --set mesh.sp=$sp --set tp_comm=$tc
    run_plan "${name}_$tc" --metrics "$WORK/${name}_$tc.jsonl" --save "$WORK/${name}_$tc.ckpt" >/dev/null
  done
done
strip() { sed -e 's/, "ms": [^,]*//' -e 's/, "tokens_per_s".*}/}/' "$1"; }
for name in bf16_tp2 bf16_sp2 fp16_tp2; do
  check "$name: 16-bit messages give the fp32 messages' losses and norms bit for bit" \
    cmp -s <(strip "$WORK/${name}_auto.jsonl") <(strip "$WORK/${name}_fp32.jsonl")
  check "$name: and the same final weights" \
    "$WEFT" ckpt diff "$WORK/${name}_auto.ckpt/model.safetensors" "$WORK/${name}_fp32.ckpt/model.safetensors"
done
check "bf16 tp 4: 16-bit sums of four partials differ from fp32 sums" \
  bash -c "! cmp -s <(grep -o '\"loss\": [^,]*' '$WORK/bf16_tp4_auto.jsonl') <(grep -o '\"loss\": [^,]*' '$WORK/bf16_tp4_fp32.jsonl')"
msg=$(same_field loss "$WORK/bf16_tp4_fp32.jsonl" "$WORK/bf16_tp4_auto.jsonl" $LAYOUT_TOL) && ok=0 || ok=1
nmsg=$(same_field grad_norm "$WORK/bf16_tp4_fp32.jsonl" "$WORK/bf16_tp4_auto.jsonl" $LAYOUT_NORM_TOL) || ok=1
check "bf16 tp 4: 16-bit sums track fp32 sums: $msg, $nmsg" test $ok = 0
check "bf16 / fp16 programs ask for 16-bit tp messages by default" \
  bash -c "grep -q 'tp_comm16 = 1' '$WORK/bf16_tp2_auto/stage0.c' && grep -q 'tp_comm16 = 1' '$WORK/fp16_tp2_auto/stage0.c'"
check "tp_comm = \"fp32\" programs do not" bash -c "! grep -q 'tp_comm16' '$WORK/bf16_tp2_fp32/stage0.c'"
"$WEFT" compile plans/tiny.lua -o "$WORK/fp32_tp2" "${small[@]}" --set mesh.tp=2 2>/dev/null
check "fp32 programs do not" bash -c "! grep -q 'tp_comm16' '$WORK/fp32_tp2/stage0.c'"
# weft check's wire table: the tp row halves but for the loss's statistics
# (this 2-layer tiny at tp 2: 2 ranks x 1 microbatch x (4L + 2 = 10
# all-reduces of N 512 x h 64 values + the loss's 20 bytes a token): 4 bytes
# a value 2641920 = 2.52 MiB, 2 bytes 1331200 = 1.27 MiB; test_passes_wire
# works through the full plans)
tp_bytes() { "$WEFT" check plans/tiny.lua "${small[@]}" --set mesh.tp=2 "$@" | sed -n 's/^  tp  *\([0-9.]*\) \([KMG]*i*B\) .*/\1 \2/p'; }
check "weft check: tp bytes per step 2.52 MiB with fp32 sums" test "$(tp_bytes --set precision=bf16 --set tp_comm=fp32)" = "2.52 MiB"
check "weft check: tp bytes per step 1.27 MiB with bf16 sums" test "$(tp_bytes --set precision=bf16)" = "1.27 MiB"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
