#!/usr/bin/env bash
# dp_buckets.sh: what a small gradient bucket costs the CPU runtime.  The
# default plan (plans/tiny.lua) at dp 2 with 0.25, 0.5, 1 and 4 MiB buckets,
# run in alternating rounds under a PMPI wrapper (bench/dp_buckets_pmpi.c):
# per step, the CPU a rank spends inside MPI_Iallreduce and MPI_Test (thread
# CPU time, so other load on the machine changes it little) and the least
# wall time of a step's final waits (the exposed reduction).  Each figure is
# the larger rank's, the median over the rounds.  Compare the CPU per extra
# bucket with weft-calibrate's dp_bucket_us (runtime/tools/calibrate.c).
#   bench/dp_buckets.sh [ROUNDS] [STEPS]      (defaults 3 and 30; from the repository root)
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/compiler/weft}
ROUNDS=${1:-3}
STEPS=${2:-30}
[ -x "$WEFT" ] || { echo "dp_buckets.sh: $WEFT not built (bash scripts/build.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-dpbuckets.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpicc -O2 -shared -fPIC -o "$work/pmpi.so" bench/dp_buckets_pmpi.c
"$WEFT" data synth -o "$work/d.bin" --tokens 200000 >/dev/null
sizes="0.25 0.5 1 4"
for mb in $sizes; do
    "$WEFT" compile plans/tiny.lua -o "$work/b$mb" --set data.train="$work/d.bin" --set buckets.mb="$mb" >/dev/null 2>&1
    cmake -S "$work/b$mb" -B "$work/b$mb/build" >/dev/null && cmake --build "$work/b$mb/build" >/dev/null
done
flags=""
if [ "$(id -u)" = 0 ]; then flags="--allow-run-as-root"; fi
for round in $(seq "$ROUNDS"); do
    for mb in $sizes; do
        # shellcheck disable=SC2086
        mpirun $flags --bind-to none -np 2 -x LD_PRELOAD="$work/pmpi.so" "$work/b$mb/build/stage0" \
            --steps "$STEPS" --quiet </dev/null | awk -v mb="$mb" '/^pmpi/ { print mb, $0 }' >> "$work/runs"
    done
done
printf '%-8s %8s %22s %18s\n' MiB buckets cpu_ms_per_step least_wait_ms
for mb in $sizes; do
    n=$(sed -n 's/.*\.n_buckets = \([0-9]*\),.*/\1/p' "$work/b$mb/stage0.c")
    # per run, the larger rank's figures; then the median over the runs
    # (a line: MiB pmpi rank R steps S issues I cpu_ms C live_tests T cpu_ms C least_wait_ms W)
    awk -v mb="$mb" '$1 == mb { k = int((NR - 1) / 2)
        cpu = ($10 + $14) / $6; w = $16
        if (!(k in c) || cpu > c[k]) c[k] = cpu
        if (!(k in l) || w > l[k]) l[k] = w }
        END { for (k in c) print c[k], l[k] }' "$work/runs" | sort -g |
        awk -v mb="$mb" -v n="$n" '{ c[NR] = $1; l[NR] = $2 } END {
            m = int((NR + 1) / 2); printf "%-8s %8d %22.3f %18.3f\n", mb, n, c[m], l[m] }'
done
