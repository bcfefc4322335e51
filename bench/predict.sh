#!/usr/bin/env bash
# Prediction accuracy on this machine: `weft calibrate`, then for several
# CPU-backend layouts of the default plan the step time `weft simulate
# --calibration` predicts against the median of 5 measured steps.
# Run from the repository root after scripts/build.sh.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$WEFT" calibrate -o "$WORK/cluster.lua"
"$WEFT" data synth -o "$WORK/d.bin" --tokens 500000 >/dev/null
printf "%-28s %12s %12s %8s\n" layout predicted_ms measured_ms error
while read -r name sets; do
  # shellcheck disable=SC2086
  "$WEFT" compile plans/tiny.lua -o "$WORK/$name" --set data.train="$WORK/d.bin" $sets 2>/dev/null
  cmake -S "$WORK/$name" -B "$WORK/$name/build" >/dev/null && cmake --build "$WORK/$name/build" >/dev/null
  "$WORK/$name/launch.sh" --steps 7 --quiet --metrics "$WORK/$name.jsonl" >/dev/null </dev/null
  measured=$(tail -n 5 "$WORK/$name.jsonl" | sed 's/.*"ms": \([0-9.]*\).*/\1/' | sort -n | sed -n 3p)
  # shellcheck disable=SC2086
  predicted=$("$WEFT" simulate plans/tiny.lua --calibration "$WORK/cluster.lua" $sets |
              sed -n 's/^iteration \([0-9.]*\) s.*/\1/p')
  awk -v n="$name" -v p="$predicted" -v m="$measured" \
    'BEGIN { printf "%-28s %12.1f %12.1f %+7.0f%%\n", n, p * 1000, m, 100 * (p * 1000 - m) / m }'
done <<'LAYOUTS'
dp2                --set mesh.dp=2
dp1_accum2         --set mesh.dp=1
tp2                --set mesh.dp=1 --set mesh.tp=2 --set batch.micro=16
pp2_1f1b           --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=4
pp2_gpipe          --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=4 --set pipeline.schedule=gpipe
pp2_zbh1           --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=4 --set pipeline.schedule=zb-h1
tp2_sp             --set mesh.dp=1 --set mesh.tp=2 --set mesh.sp=true --set batch.micro=16
dp2_small_batch    --set mesh.dp=2 --set batch.micro=4 --set batch.global=8
LAYOUTS
