#!/usr/bin/env bash
# Attention's saved buffer and scratch (compiler only, no GPU): both
# backends' kernels (runtime/cpu/attention.c, runtime/cuda/attention.cu)
# keep a log-sum-exp per query row and head, never a (T, T) matrix, and use
# B*H*T floats of scratch (D per row).
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
  for b in cpu cuda; do
    check "$name: $b saves B*H*T = $rows floats per attention (all $L layers; B*H*T*T would be $((rows * T)))" \
      test "$(saved "$WORK/$name.$b.dump" | sort -u)" = "$rows" -a "$(saved "$WORK/$name.$b.dump" | wc -l)" = "$L"
    check "$name: $b scratch is B*H*T" test "$(scratch "$WORK/$name.$b.dump")" = "$rows"
  done
  check "$name: CPU and CUDA activation slots are the same size" \
    test "$(slot "$d")" = "$(slot "$WORK/$name.cuda.dump")"
done

# weft check and weft simulate report the same activation memory on both
# backends, and check says what attention saves
mib() { awk -v k="$1" '$1 == k && $3 == "MiB" { print $2; exit }' "$2"; }
acts() { awk '$1 == "stage" && $2 == "0" { print $9; exit }' "$1"; }  # activations, MiB
for plan in tiny llama_tiny; do
  "$WEFT" check plans/$plan.lua >"$WORK/check.cpu"
  "$WEFT" check plans/$plan.lua --backend cuda >"$WORK/check.cuda"
  check "$plan: check: the same activation memory on both backends ($(mib activations "$WORK/check.cpu") MiB)" \
    test "$(mib activations "$WORK/check.cpu")" = "$(mib activations "$WORK/check.cuda")"
  for b in cpu cuda; do
    check "$plan: check --backend $b: says what attention saves" grep -q "^  attention .* log-sum-exp" "$WORK/check.$b"
  done
  "$WEFT" simulate plans/$plan.lua >"$WORK/sim.cpu"
  "$WEFT" simulate plans/$plan.lua --backend cuda >"$WORK/sim.cuda"
  check "$plan: simulate: the same activation memory on both backends ($(acts "$WORK/sim.cpu") MiB)" \
    test "$(acts "$WORK/sim.cpu")" = "$(acts "$WORK/sim.cuda")"
done

# the generated program uses the memory pass's sizes
for v in tiny:tiny llama:llama_tiny; do
  d=$WORK/${v%%:*}.cuda.dump
  rows=$(( $(field micro "$d") * $(field heads "$d") * $(field seq "$d") ))
  for b in cpu:c cuda:cu; do
    "$WEFT" compile plans/${v#*:}.lua -o "$WORK/$b-${v%%:*}" --backend ${b%%:*} 2>/dev/null
    src=$WORK/$b-${v%%:*}/stage0.${b#*:}
    check "${v#*:}: compile --backend ${b%%:*}: S_H0_ATTENTION_1 holds $rows floats" \
      grep -q "^#define S_H0_ATTENTION_1 .*saved for backward: $rows floats" "$src"
    check "${v#*:}: compile --backend ${b%%:*}: scratch_numel = $rows" grep -q "\.scratch_numel = ${rows}L" "$src"
  done
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
