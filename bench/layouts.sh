#!/usr/bin/env bash
# Layouts at a fixed global batch on this machine: one rank against dp 8, tp 8,
# and pp 8 with 1f1b and zb-h1 (8 ranks on this machine's cores), measured
# (median of 5 steps after the first) and predicted (`weft simulate` after
# `weft calibrate`); then, for the pipelines, each stage's idle share of a
# step, predicted against measured (`weft trace compare`).
# Run from the repository root after scripts/build.sh.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_mpi_yield_when_idle=1
"$WEFT" calibrate -o "$WORK/cluster.lua" >/dev/null
"$WEFT" data synth -o "$WORK/d.bin" --tokens 500000 >/dev/null
model=(--set model.layers=8 --set model.hidden=128 --set model.heads=8 --set model.seq=128
       --set model.vocab=256 --set batch.global=16 --set data.train="$WORK/d.bin"
       --set cluster.devices_per_node=8)
printf "%-12s %5s %12s %9s %12s %8s\n" layout ranks measured_ms vs_1rank predicted_ms error
one=""
while read -r name sets; do
  # shellcheck disable=SC2086
  set_=("${model[@]}" $sets)
  "$WEFT" compile plans/tiny.lua -o "$WORK/$name" "${set_[@]}" 2>/dev/null
  cmake -S "$WORK/$name" -B "$WORK/$name/build" >/dev/null && cmake --build "$WORK/$name/build" >/dev/null
  "$WORK/$name/launch.sh" --steps 6 --quiet --metrics "$WORK/$name.jsonl" --trace "$WORK/$name.json" \
    >/dev/null </dev/null
  ms=$(tail -n 5 "$WORK/$name.jsonl" | sed 's/.*"ms": \([0-9.]*\).*/\1/' | sort -n | sed -n 3p)
  [ -n "$one" ] || one=$ms
  ranks=$(grep -cv '^#' "$WORK/$name/ranks.txt" || true)
  pred=$("$WEFT" simulate plans/tiny.lua "${set_[@]}" --calibration "$WORK/cluster.lua" |
         sed -n 's/^iteration \([0-9.]*\) s.*/\1/p')
  awk -v n="$name" -v r="$ranks" -v m="$ms" -v o="$one" -v p="$pred" 'BEGIN {
    printf "%-12s %5s %12.1f %8.2fx %12.1f %+7.0f%%\n", n, r, m, o / m, p * 1000, 100 * (p * 1000 - m) / m }'
  if [[ $name == pp8* ]]; then
    "$WEFT" simulate plans/tiny.lua "${set_[@]}" --calibration "$WORK/cluster.lua" --format chrome \
      -o "$WORK/$name.pred.json"
    "$WEFT" trace compare "$WORK/$name.pred.json" "$WORK/$name.json" |
      sed -n '/^rank /,/^unmatched/p' | sed '$d' | sed "s/^/    $name  /" >>"$WORK/idle.txt"
  fi
done <<'LAYOUTS'
one_rank  --set mesh.dp=1 --set batch.micro=16
dp8       --set mesh.dp=8 --set batch.micro=2
tp8       --set mesh.dp=1 --set mesh.tp=8 --set batch.micro=16
tp8_sp    --set mesh.dp=1 --set mesh.tp=8 --set mesh.sp=true --set batch.micro=16
pp8_1f1b  --set mesh.dp=1 --set mesh.pp=8 --set batch.micro=2
pp8_zbh1  --set mesh.dp=1 --set mesh.pp=8 --set batch.micro=2 --set pipeline.schedule=zb-h1
LAYOUTS
echo
echo "per pipeline stage (rank = stage): predicted and measured span and idle share of a step"
cat "$WORK/idle.txt"
