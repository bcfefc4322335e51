#!/usr/bin/env bash
# The vision encoder's share of the first pipeline stage, predicted and
# measured: plans/vlm_tiny.lua at pp 2 (encoder and projector on stage 0)
# trains with --profile, whose `profile rank 0 encoder:` line times the
# encoder's and projector's ops (emit_ops.c marks them WF_PROF_ENCODER) as a
# share of rank 0's op compute; beside it `weft simulate`'s share of the
# first chunk's compute (its cost model, calibrated on this machine with
# --calibrate) and `weft inspect`'s share of the first chunk's forward
# matmul FLOPs (what partition balances).  On the CPU backend --profile's
# switches only read the clock, so the times are those of the plain run.
# Run from the repository root after scripts/build.sh; STEPS (default 20)
# steps, all of them timed.
#   bench/vlm_share.sh [--calibrate] [--set k=v ...]
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
STEPS=${STEPS:-20}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
calib=()
if [ "${1:-}" = --calibrate ]; then
  shift
  "$WEFT" calibrate -o "$WORK/cluster.lua" >/dev/null
  calib=(--calibration "$WORK/cluster.lua")
fi
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq 24 --count 512 --seed 5 >/dev/null
sets=(--set mesh.pp=2 --set cluster.devices_per_node=2 --set batch.micro=8 --set data.train="$WORK/vlm.bin"
      --set train.steps="$STEPS" "$@")
"$WEFT" compile plans/vlm_tiny.lua -o "$WORK/prog" "${sets[@]}" >/dev/null 2>&1
cmake -S "$WORK/prog" -B "$WORK/prog/build" >/dev/null && cmake --build "$WORK/prog/build" >/dev/null
"$WORK/prog/launch.sh" --profile >"$WORK/run.log" 2>&1 </dev/null
grep -E '^profile rank' "$WORK/run.log"
measured=$(sed -n 's/^profile rank 0 encoder: .*, \([0-9.]*\)% of its compute.*/\1/p' "$WORK/run.log")
step_share=$(sed -n 's/^profile rank 0 encoder: .* ms\/step, \([0-9.]*\)% of the step.*/\1/p' "$WORK/run.log")
simulated=$("$WEFT" simulate plans/vlm_tiny.lua "${sets[@]}" "${calib[@]}" | sed -n 's/^encoder .*(\([0-9.]*\)%)$/\1/p')
inspected=$("$WEFT" inspect plans/vlm_tiny.lua "${sets[@]}" | sed -n 's/^encoder .*(\([0-9.]*\)%;.*/\1/p')
printf "%-44s %8s\n" "vision encoder + projector, share of stage 0" "%"
printf "%-44s %8s\n" "measured (--profile, of rank 0's op compute)" "${measured:-?}"
printf "%-44s %8s\n" "measured (--profile, of rank 0's whole step)" "${step_share:-?}"
printf "%-44s %8s\n" "weft simulate${calib:+ --calibration} (first chunk's compute)" "${simulated:-?}"
printf "%-44s %8s\n" "weft inspect (first chunk's forward FLOPs)" "${inspected:-?}"
