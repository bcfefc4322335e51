#!/usr/bin/env bash
# Attention's saved buffer and scratch are sized per backend (compiler only, no
# GPU): the CPU kernels keep each head's (T, T) softmax probabilities and use
# one head's (T, T) scratch; the CUDA flash kernels (runtime/cuda/attention.cu)
# keep a log-sum-exp per query row and head and use B*H*T floats of scratch.
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
  check "$name: CPU saves B*H*T*T = $((rows * T)) floats per attention (all $L layers)" \
    test "$(saved "$d" | sort -u)" = "$((rows * T))" -a "$(saved "$d" | wc -l)" = "$L"
  check "$name: CUDA saves B*H*T = $rows floats per attention (all $L layers)" \
    test "$(saved "$WORK/$name.cuda.dump" | sort -u)" = "$rows" -a "$(saved "$WORK/$name.cuda.dump" | wc -l)" = "$L"
  check "$name: scratch is T*T on the CPU, B*H*T on CUDA" \
    test "$(scratch "$d")" = "$((T * T))" -a "$(scratch "$WORK/$name.cuda.dump")" = "$rows"
  # every layer's buffer is its own: the slots shrink by exactly L of them
  check "$name: CUDA activation slots are L*(B*H*T*T - B*H*T) floats smaller" \
    test $(( $(slot "$d") - $(slot "$WORK/$name.cuda.dump") )) = $((L * (rows * T - rows)))
done

# weft check and weft simulate report the smaller activation memory
mib() { awk -v k="$1" '$1 == k && $3 == "MiB" { print $2; exit }' "$2"; }
acts() { awk '$1 == "stage" && $2 == "0" { print $9; exit }' "$1"; }  # activations, MiB
for plan in tiny llama_tiny; do
  "$WEFT" check plans/$plan.lua >"$WORK/check.cpu"
  "$WEFT" check plans/$plan.lua --backend cuda >"$WORK/check.cuda"
  check "$plan: check --backend cuda: less activation memory ($(mib activations "$WORK/check.cuda") < $(mib activations "$WORK/check.cpu") MiB)" \
    awk -v a="$(mib activations "$WORK/check.cuda")" -v b="$(mib activations "$WORK/check.cpu")" 'BEGIN { exit !(a > 0 && a < b) }'
  check "$plan: check --backend cuda: says what attention saves" grep -q "^  attention .* log-sum-exp" "$WORK/check.cuda"
  check "$plan: check (cpu): no such line" bash -c "! grep -q log-sum-exp '$WORK/check.cpu'"
  "$WEFT" simulate plans/$plan.lua >"$WORK/sim.cpu"
  "$WEFT" simulate plans/$plan.lua --backend cuda >"$WORK/sim.cuda"
  check "$plan: simulate --backend cuda: less activation memory ($(acts "$WORK/sim.cuda") < $(acts "$WORK/sim.cpu") MiB)" \
    awk -v a="$(acts "$WORK/sim.cuda")" -v b="$(acts "$WORK/sim.cpu")" 'BEGIN { exit !(a > 0 && a < b) }'
done

# the generated program uses the memory pass's sizes
for v in tiny:tiny llama:llama_tiny; do
  "$WEFT" compile plans/${v#*:}.lua -o "$WORK/cu-${v%%:*}" --backend cuda 2>/dev/null
  d=$WORK/${v%%:*}.cuda.dump
  rows=$(( $(field micro "$d") * $(field heads "$d") * $(field seq "$d") ))
  check "${v#*:}: compile --backend cuda: S_H0_ATTENTION_1 holds $rows floats" \
    grep -q "^#define S_H0_ATTENTION_1 .*saved for backward: $rows floats" "$WORK/cu-${v%%:*}/stage0.cu"
  check "${v#*:}: compile --backend cuda: scratch_numel = $rows" grep -q "\.scratch_numel = ${rows}L" "$WORK/cu-${v%%:*}/stage0.cu"
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
