#!/usr/bin/env bash
# sc21_plan.sh: `weft plan` against the layouts of Narayanan et al., SC21,
# Table 1 (plans/paper/narayanan_*.lua: A100 80 GB, 8 a node).  For each
# model, on the paper's GPU count and global batch, prints the paper's own
# layout and its predicted throughput (`weft simulate --backend cuda`) next to
# the layout `weft plan --backend cuda` chooses and its predicted throughput,
# both in TFLOP/s per GPU by the paper's FLOP count (its equation 3, as
# bench/megatron_holdout.sh), and the search's CPU seconds / wall seconds and
# its builds.  Both
# columns are predictions of the same cost model: the comparison is of the
# layouts, not of the model against the paper (that is megatron_holdout.sh).
#
#   bench/sc21_plan.sh [WEFT] [EXTRA weft plan OPTIONS...]   (default build/compiler/weft)
set -uo pipefail
cd "$(dirname "$0")/.."
WEFT=${1:-build/compiler/weft}
shift || true
[ -x "$WEFT" ] || { echo "sc21_plan.sh: $WEFT not built (bash scripts/build.sh)" >&2; exit 1; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/weft-sc21.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# TFLOP/s per GPU by the paper's equation 3 from an iteration time:
# 96 B s l h^2 (1 + s / 6h + V / 16lh) over the time, per GPU
eq3() {  # plan iteration_s
    local B l h world
    B=$(sed -n 's/.*global = \([0-9]*\).*/\1/p' "$1" | head -1)
    l=$(sed -n 's/.*layers = \([0-9]*\).*/\1/p' "$1" | head -1)
    h=$(sed -n 's/.*hidden = \([0-9]*\).*/\1/p' "$1" | head -1)
    world=$(sed -n 's/^-- .* on \([0-9]*\) A100.*/\1/p' "$1" | head -1)
    awk -v B="$B" -v l="$l" -v h="$h" -v t="$2" -v n="$world" 'BEGIN { s = 2048; V = 51200
        printf "%.1f", 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h)) / t / n / 1e12 }'
}

printf '%-7s %5s  %-34s %7s  %-58s %7s %6s %8s %6s\n' model GPUs "paper layout" TFLOP/s "weft plan's choice" \
    TFLOP/s ratio cpu/wall built
for plan in $(ls plans/paper/narayanan_*.lua | sort -t_ -k2 -g); do
    name=$(basename "$plan" .lua | sed 's/narayanan_//; s/_/./; s/b$/B/')
    gpus=$(sed -n 's/^-- .* on \([0-9]*\) A100.*/\1/p' "$plan" | head -1)
    sim=$("$WEFT" simulate --backend cuda "$plan" 2>&1)
    iter=$(printf '%s\n' "$sim" | sed -n 's/^iteration \([0-9.e+]*\) s:.*/\1/p')
    if [ -n "$iter" ]; then
        paper=$(printf '%s\n' "$sim" | sed -n '1s/.*; \(dp [0-9]* x tp [0-9]* x pp [0-9]*\), \([a-z0-9-]*\).*/\1 \2/p')
        ptf=$(eq3 "$plan" "$iter")
    else
        paper="refused: $(printf '%s\n' "$sim" | head -1 | cut -c1-60)"
        ptf=-
    fi
    # the search's CPU time (user + system): this machine may be shared
    TIMEFORMAT='%R %U %S'
    { time "$WEFT" plan --backend cuda "$plan" --top 1 -o "$tmp/best.lua" "$@" > "$tmp/out" 2> "$tmp/err"; } \
        2> "$tmp/time"
    rc=$(grep -q 'wrote' "$tmp/err" && echo 0 || echo 1)
    secs=$(awk '{ printf "%.1f/%.0f", $2 + $3, $1 }' "$tmp/time")
    built=$(sed -n 's/^built \([0-9]*\) through.*/\1/p' "$tmp/out")
    if [ $rc -ne 0 ] || [ ! -s "$tmp/best.lua" ]; then
        printf '%-7s %5s  %-34s %7s  %-58s %7s %6s %8s %6s\n' "$name" "$gpus" "$paper" "$ptf" \
            "none: $(grep -m1 error "$tmp/err" | sed 's/.*error: [^:]*: //' | cut -c1-52)" - - "$secs" "${built:--}"
        rm -f "$tmp/best.lua"
        continue
    fi
    layout=$(awk '$1 == "1" { $1 = ""; sub(/^ /, ""); print }' "$tmp/out" | sed -E 's/ [0-9.]+ [0-9]+ [0-9.]+%.*//')
    biter=$("$WEFT" simulate --backend cuda "$tmp/best.lua" 2>&1 | sed -n 's/^iteration \([0-9.e+]*\) s:.*/\1/p')
    btf=$(eq3 "$plan" "$biter")
    ratio=$([ "$ptf" != - ] && awk -v a="$btf" -v b="$ptf" 'BEGIN { printf "%.2f", a / b }' || echo -)
    printf '%-7s %5s  %-34s %7s  %-58s %7s %6s %8s %6s\n' "$name" "$gpus" "$paper" "$ptf" "$layout" "$btf" \
        "$ratio" "$secs" "$built"
    rm -f "$tmp/best.lua"
done
