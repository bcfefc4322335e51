#!/usr/bin/env bash
# bind.sh: does binding oversubscribed CPU ranks to cores (runtime/cpu/bind.c:
# a node's ranks dealt to its cores in turn, in stage order) beat leaving
# them to the kernel (WEFT_BIND=0)?  Four layouts of the default plan on one
# node of 4 ranks (run it where there are fewer than 4 cores, else nothing is
# bound): dp 2 x pp 2 gpipe (micro 8: one microbatch a step, the stages
# alternate), dp 2 x pp 2 1f1b (micro 2, 4 a step), tp 2 x pp 2 1f1b (micro
# 4) and dp 4 (the runtime binds neither of the last two, so they show the
# noise; WEFT_BIND=all binds them too, to measure what it would do).
# Each round runs every layout bound and unbound back to back
# (which first alternates by round, so a change in the machine's load
# touches both alike); a run's step time is the median of its steps after
# two warm-up steps.  Prints per layout the median over rounds of each and
# the median of the per-round ratios bound / unbound (< 1: binding wins).
# On a machine other jobs share, run it at a higher priority than theirs
# (measured at nice 0 against their nice 10, load ~10 on 2 cores).
#   bench/bind.sh [ROUNDS] [STEPS]   (defaults 6 and 10; from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/compiler/weft}
ROUNDS=${1:-6}
ON=${WEFT_BIND:-auto}  # the bound runs' WEFT_BIND (all: tp and one-stage layouts too)
STEPS=${2:-10}
[ -x "$WEFT" ] || { echo "bind.sh: $WEFT not built (bash scripts/build.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-bind.XXXXXX")
trap 'rm -rf "$work"' EXIT
"$WEFT" data synth -o "$work/d.bin" --tokens 200000 >/dev/null
echo "== 4 ranks on $(nproc) cores; $ROUNDS rounds of $STEPS steps"

layouts=(
    "dp2_pp2_gpipe_m8 --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=8 --set pipeline.schedule=gpipe"
    "dp2_pp2_1f1b_m2 --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=2"
    "tp2_pp2_1f1b_m4 --set mesh.dp=1 --set mesh.tp=2 --set mesh.pp=2 --set batch.micro=4"
    "dp4_m4 --set mesh.dp=4 --set batch.micro=4"
)
names=()
for l in "${layouts[@]}"; do
    name=${l%% *}
    # shellcheck disable=SC2086
    "$WEFT" compile plans/tiny.lua -o "$work/$name" --set data.train="$work/d.bin" \
        --set cluster.devices_per_node=4 ${l#* } > "$work/$name.log" 2>&1 &&
        cmake -S "$work/$name" -B "$work/$name/build" >> "$work/$name.log" 2>&1 &&
        cmake --build "$work/$name/build" >> "$work/$name.log" 2>&1 ||
        { echo "$name: build failed" >&2; tail -5 "$work/$name.log" >&2; exit 1; }
    names+=("$name")
done

# one run: its median step (ms) after the warm-up, appended to $work/NAME.BIND
run() {
    local name=$1 bind=$2
    rm -f "$work/m.jsonl"
    WEFT_BIND=$bind "$work/$name/launch.sh" --steps "$STEPS" --quiet --metrics "$work/m.jsonl" \
        > "$work/run.log" 2>&1 < /dev/null || { echo "$name WEFT_BIND=$bind: run failed" >&2; tail -3 "$work/run.log" >&2; exit 1; }
    tail -n +3 "$work/m.jsonl" | sed -n 's/.*"ms": \([0-9.]*\).*/\1/p' | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }' \
        >> "$work/$name.$bind"
}
for round in $(seq "$ROUNDS"); do
    for name in "${names[@]}"; do
        if [ $((round % 2)) = 1 ]; then run "$name" "$ON"; run "$name" 0; else run "$name" 0; run "$name" "$ON"; fi
    done
done

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }
printf '%-18s %10s %10s %14s  %s\n' layout bound_ms kernel_ms ratio_median per-round_ratios
for name in "${names[@]}"; do
    ratios=$(paste "$work/$name.$ON" "$work/$name.0" | awk '{ printf "%.3f\n", $1 / $2 }')
    printf '%-18s %10.2f %10.2f %14.3f  %s\n' "$name" "$(median < "$work/$name.$ON")" "$(median < "$work/$name.0")" \
        "$(echo "$ratios" | median)" "$(echo "$ratios" | tr '\n' ' ')"
done
