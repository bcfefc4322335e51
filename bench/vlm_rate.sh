#!/usr/bin/env bash
# Images and tokens a second of a small VLM plan (plans/vlm_tiny.lua: a
# 2-layer ViT on 32x32 images, the projector, a 2-layer GPT-2; or PLAN) on
# the CPU backend, on one rank and on dp 2, side by side in one run.  Each
# layout trains STEPS steps (default 30) of the same global batch (GLOBAL,
# default 32 samples of 24 rows: 16 image patches and 8 text positions);
# the first step (allocation, warm-up) is left out, and the median of the
# others' wall times (--metrics' "ms") gives the rates:
#   images/s = GLOBAL / step, tokens/s = GLOBAL x seq / step
# (tokens: every row of the sequence, patches included, as the runtime's
# own tok/s counts them), and text tokens/s the rows past the patches
# (the captions and their padding).
# Run from the repository root after scripts/build.sh:
#   bench/vlm_rate.sh [--set k=v ...]
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
PLAN=${PLAN:-plans/vlm_tiny.lua}
STEPS=${STEPS:-30} GLOBAL=${GLOBAL:-32} SEQ=24
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1  # one core a rank: the layouts compare ranks, not threads
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq $SEQ --count 512 --seed 5 >/dev/null
# image positions: the patches each sample starts with (vlm-synth's --image / --patch)
P=$(((32 / 8) * (32 / 8)))
printf "%-34s %9s %9s %12s %14s\n" "layout ($(basename "$PLAN"), global $GLOBAL)" "ms/step" "images/s" "tokens/s" "text tokens/s"
for layout in "1 rank:1:$GLOBAL" "dp 2:2:$((GLOBAL / 2))"; do
  IFS=: read -r name dp micro <<<"$layout"
  prog=$WORK/dp$dp
  "$WEFT" compile "$PLAN" -o "$prog" --set data.train="$WORK/vlm.bin" --set train.steps="$STEPS" \
    --set batch.global="$GLOBAL" --set batch.micro="$micro" --set mesh.dp="$dp" \
    --set cluster.devices_per_node="$dp" "$@" >/dev/null 2>&1
  cmake -S "$prog" -B "$prog/build" >/dev/null && cmake --build "$prog/build" >/dev/null
  "$prog/launch.sh" --metrics "$WORK/dp$dp.jsonl" >"$WORK/dp$dp.log" 2>&1 </dev/null ||
    { tail -n 5 "$WORK/dp$dp.log"; exit 1; }
  ms=$(sed -n '2,$s/.*"ms": \([0-9.]*\).*/\1/p' "$WORK/dp$dp.jsonl" | sort -g |
       awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  awk -v n="$name" -v ms="$ms" -v g="$GLOBAL" -v t=$SEQ -v p=$P 'BEGIN {
    s = ms / 1000; printf "%-34s %9.2f %9.1f %12.0f %14.0f\n", n, ms, g / s, g * t / s, g * (t - p) / s }'
done
# on a shared machine the dp 2 row is only as fast as the cores left to it
echo "($(nproc) cores; load average $(cut -d' ' -f1-3 /proc/loadavg) at the end)"
