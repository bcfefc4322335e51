#!/usr/bin/env bash
# Attention's saved buffer and scratch (compiler only, no GPU): both
# backends' kernels (runtime/cpu/attention.c, runtime/cuda/attention.cu)
# keep a log-sum-exp per query row and head, never a (T, T) matrix, and use
# B*H*T floats of scratch (D per row).  The LM head runs fused and chunked in
# backward on both (nothing saved; one chunk of logits in scratch, the whole
# microbatch of N tokens x VL in these small plans, fp32: floats on both), so
# the two backends' memory is the same.
# LLaMA's grouped-query attention likewise, H being its query heads (the
# dk/dv kernel reads the log-sum-exp and D of every query head of a group).
# The memory pass's sizes on six plans (tp 2, selective recompute, the 3D
# plan, LLaMA at tp 1 and 2) are tests/unit/test_passes_memory.c's; here
# --dump=memory prints them for tiny and llama_tiny, the expected sizes
# computed from the plan's numbers as the dump prints them (micro, heads,
# seq, tp), and check, simulate and the generated program must all agree.
source "$(dirname "$0")/lib.sh"

# field NAME FILE: the number after "NAME=" in the dump's plan line
field() { sed -n "s/^plan .* $1=\([0-9]*\).*/\1/p" "$2" | head -1; }

for v in "tiny:plans/tiny.lua" "llama:plans/llama_tiny.lua"; do
  name=${v%%:*}
  read -r -a args <<<"${v#*:}"
  for backend in cpu cuda; do
    "$WEFT" check "${args[@]}" --backend "$backend" --dump=memory >"$WORK/$name.$backend.dump"
  done
  d=$WORK/$name.cpu.dump
  B=$(field micro "$d") H=$(field heads "$d") T=$(field seq "$d") L=$(field L "$d") tp=$(field tp "$d")
  rows=$((B * H / tp * T))  # query rows of one layer on this rank
  saved() { awk '$3 == "attention" { for (i = 1; i < NF; i++) if ($i == "saved") { sub(/.*\+/, "", $(i + 1)); print $(i + 1) } }' "$1"; }
  scratch() { sed -n 's/.*scratch \([0-9]*\) floats/\1/p' "$1" | sort -u; }
  slot() { awk '/arenas:/ { for (i = 1; i < NF; i++) if ($i == "slot") s += $(i + 1) } END { print s }' "$1"; }
  head_saved() { awk '$3 == "lmhead_xent" { for (i = 1; i < NF; i++) if ($i == "saved") { sub(/.*\+/, "", $(i + 1)); print $(i + 1) } }' "$1"; }
  for b in cpu cuda; do
    check "$name: $b saves B*H*T = $rows floats per attention (all $L layers; B*H*T*T would be $((rows * T)))" \
      test "$(saved "$WORK/$name.$b.dump" | sort -u)" = "$rows" -a "$(saved "$WORK/$name.$b.dump" | wc -l)" = "$L"
  done
  V=$(field vocab "$d")
  dl=$((B * T * ((V + tp - 1) / tp)))  # N * VL (shard.c pads V to tp): the head's chunk of logits
  for b in cpu cuda; do
    check "$name: $b scratch is the larger of B*H*T and the LM head's N*VL = $dl" \
      test "$(scratch "$WORK/$name.$b.dump")" = "$((dl > rows ? dl : rows))"
    check "$name: the $b LM head saves nothing" test -z "$(head_saved "$WORK/$name.$b.dump")"
  done
  check "$name: CPU activation slot = CUDA's" test "$(slot "$d")" = "$(slot "$WORK/$name.cuda.dump")"
  eval "dlogits_$name=$dl"
done

# weft check and weft simulate report the same activation memory on both
# backends (MiB, as printed), and check says what attention saves
mib() { awk -v k="$1" '$1 == k && $3 == "MiB" { print $2; exit }' "$2"; }
acts() { awk '$1 == "stage" && $2 == "0" { print $9; exit }' "$1"; }  # activations, MiB
for v in tiny:tiny llama_tiny:llama; do
  plan=${v%%:*}
  "$WEFT" check plans/$plan.lua >"$WORK/check.cpu"
  "$WEFT" check plans/$plan.lua --backend cuda >"$WORK/check.cuda"
  check "$plan: check: CPU activations $(mib activations "$WORK/check.cpu") MiB = CUDA's $(mib activations "$WORK/check.cuda")" \
    test -n "$(mib activations "$WORK/check.cpu")" -a "$(mib activations "$WORK/check.cpu")" = "$(mib activations "$WORK/check.cuda")"
  for b in cpu cuda; do
    check "$plan: check --backend $b: says what attention saves" grep -q "^  attention .* log-sum-exp" "$WORK/check.$b"
  done
  "$WEFT" simulate plans/$plan.lua >"$WORK/sim.cpu"
  "$WEFT" simulate plans/$plan.lua --backend cuda >"$WORK/sim.cuda"
  check "$plan: simulate: CPU activations $(acts "$WORK/sim.cpu") MiB = CUDA's $(acts "$WORK/sim.cuda")" \
    test -n "$(acts "$WORK/sim.cpu")" -a "$(acts "$WORK/sim.cpu")" = "$(acts "$WORK/sim.cuda")"
done

# the generated program uses the memory pass's sizes
for v in tiny:tiny llama:llama_tiny; do
  d=$WORK/${v%%:*}.cuda.dump
  rows=$(( $(field micro "$d") * $(field heads "$d") * $(field seq "$d") ))
  dl=$(eval echo "\$dlogits_${v%%:*}")
  for b in cpu:c cuda:cu; do
    "$WEFT" compile plans/${v#*:}.lua -o "$WORK/$b-${v%%:*}" --backend ${b%%:*} 2>/dev/null
    src=$WORK/$b-${v%%:*}/stage0.${b#*:}
    want=$rows; [ "$dl" -gt "$rows" ] && want=$dl
    check "${v#*:}: compile --backend ${b%%:*}: S_H0_ATTENTION_1 holds $rows floats" \
      grep -q "^#define S_H0_ATTENTION_1 .*saved for backward: $rows floats" "$src"
    check "${v#*:}: compile --backend ${b%%:*}: scratch_numel = $want" grep -q "\.scratch_numel = ${want}L" "$src"
  done
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
