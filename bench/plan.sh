#!/usr/bin/env bash
# plan.sh: is `weft plan`'s ranking right on this machine?  For the default
# plan (plans/tiny.lua, its global batch) on 1, 2, 4 and 8 ranks of one node
# (more ranks than cores oversubscribed), `weft calibrate`, then `weft plan
# --calibration` prices every layout that fits; the layouts are ranked by
# predicted step time across the rank counts, the top 10 and 5 others (evenly
# spaced over the rest of the ranking) are compiled, built and measured in
# alternating rounds (every layout once per round, so a change in the
# machine's load touches them all alike), each run's step time the median of
# its steps after the warm-up, a layout's the median over the rounds.
# Prints predicted against measured, Spearman's rank correlation between the
# two, and whether the top-ranked layout is within 5% of the best measured.
#
#   bench/plan.sh [ROUNDS] [STEPS]      (defaults 3 and 8; run from the repository root)
# WEFT, and CALIBRATION (a cluster file from `weft calibrate`, else measured here).
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/compiler/weft}
ROUNDS=${1:-3}
STEPS=${2:-8}
PLAN=plans/tiny.lua
[ -x "$WEFT" ] || { echo "plan.sh: $WEFT not built (bash scripts/build.sh)" >&2; exit 1; }
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-planbench.XXXXXX")
trap 'rm -rf "$work"' EXIT

cal=${CALIBRATION:-}
if [ -z "$cal" ]; then
    cal=$work/cluster.lua
    "$WEFT" calibrate -o "$cal" >&2
fi
"$WEFT" data synth -o "$work/d.bin" --tokens 200000 >/dev/null

# every priced layout: predicted seconds, then its --set list
: > "$work/ranked"
for n in 1 2 4 8; do
    "$WEFT" plan "$PLAN" --gpus "$n" --set cluster.devices_per_node="$n" --calibration "$cal" \
        --top 100000 --max-priced 100000 --print-sets > "$work/plan$n.txt" 2> "$work/plan$n.err" ||
        { cat "$work/plan$n.txt" "$work/plan$n.err" >&2; exit 1; }
    # stdout and stderr apart: the search's closing message on stderr once
    # landed inside a buffered "sets" line, which then sorted first as 0 s
    awk -v n="$n" '/^built/ { print n " ranks: " $0; exit }' "$work/plan$n.txt" "$work/plan$n.err" >&2
    awk -F'\t' '$1 == "sets" { print $3 "\t" $4 }' "$work/plan$n.txt" >> "$work/ranked"
done
sort -g -k1,1 -s "$work/ranked" > "$work/sorted"
total=$(wc -l < "$work/sorted")
echo "layouts that fit and were priced: $total" >&2
[ "$total" -ge 1 ] || exit 1

# the top 10 and 5 others evenly spaced over ranks 11..total
pick=$(awk -v n="$total" 'BEGIN {
    for (i = 1; i <= 10 && i <= n; i++) print i
    rest = n - 10
    if (rest > 0) for (k = 1; k <= 5 && k <= rest; k++) print 10 + int(k * rest / (rest < 5 ? rest : 5)) }' | sort -nu)
ids=()
for r in $pick; do
    line=$(sed -n "${r}p" "$work/sorted")
    pred=${line%%$'\t'*}
    sets=${line#*$'\t'}
    dir=$work/L$r
    # shellcheck disable=SC2086
    "$WEFT" compile "$PLAN" -o "$dir" --set data.train="$work/d.bin" $sets > "$dir.log" 2>&1 &&
        cmake -S "$dir" -B "$dir/build" >> "$dir.log" 2>&1 && cmake --build "$dir/build" >> "$dir.log" 2>&1 ||
        { echo "rank $r: build failed (see below)" >&2; tail -5 "$dir.log" >&2; continue; }
    echo "$pred" > "$dir.pred"
    echo "$sets" | sed 's/--set //g; s/cluster\.[a-z_]*=[0-9]* //g' > "$dir.name"
    ids+=("$r")
done
echo "built ${#ids[@]} layouts; measuring $ROUNDS alternating rounds of $STEPS steps" >&2

for round in $(seq "$ROUNDS"); do
    for r in "${ids[@]}"; do
        dir=$work/L$r
        rm -f "$dir.jsonl"
        if "$dir/launch.sh" --steps "$STEPS" --quiet --metrics "$dir.jsonl" > "$dir.run.log" 2>&1 </dev/null; then
            # the median step after the first two (warm-up)
            # (as "round ms": the rounds pair the layouts' runs, below)
            tail -n +3 "$dir.jsonl" | sed -n 's/.*"ms": \([0-9.]*\).*/\1/p' | sort -g |
                awk -v round="$round" '{ v[NR] = $1 }
                    END { if (NR) print round, (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }' \
                >> "$dir.meas"
        else
            echo "rank $r round $round: run failed" >&2
            tail -3 "$dir.run.log" >&2
        fi
    done
done

# each layout: the median over the rounds, and the least and most of them
printf '%-5s %12s %12s %17s  %s\n' rank predicted_ms measured_ms rounds_min-max layout
: > "$work/pairs"
for r in "${ids[@]}"; do
    dir=$work/L$r
    [ -s "$dir.meas" ] || continue
    read -r m lo hi < <(awk '{ print $2 }' "$dir.meas" | sort -g |
        awk '{ v[NR] = $1 } END { print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2), v[1], v[NR] }')
    p=$(awk -v s="$(cat "$dir.pred")" 'BEGIN { printf "%.2f", s * 1000 }')
    printf '%-5s %12s %12.2f %8.2f-%-8.2f  %s\n' "$r" "$p" "$m" "$lo" "$hi" "$(cat "$dir.name")"
    echo "$r $p $m" >> "$work/pairs"
done
# Spearman: Pearson correlation of the ranks (ties get their mean rank)
awk '
function rank(col, out,   i, j, k, n, idx, tmp) {
    n = N
    for (i = 1; i <= n; i++) idx[i] = i
    for (i = 2; i <= n; i++) for (j = i; j > 1 && V[col, idx[j - 1]] > V[col, idx[j]]; j--) {
        tmp = idx[j]; idx[j] = idx[j - 1]; idx[j - 1] = tmp }
    for (i = 1; i <= n; i = k) {
        for (k = i + 1; k <= n && V[col, idx[k]] == V[col, idx[i]]; k++);
        for (j = i; j < k; j++) out[idx[j]] = (i + k - 1) / 2
    }
}
{ N++; V[1, N] = $2; V[2, N] = $3; R0[N] = $1 }
END {
    rank(1, a); rank(2, b)
    for (i = 1; i <= N; i++) { ma += a[i] / N; mb += b[i] / N }
    for (i = 1; i <= N; i++) { sab += (a[i] - ma) * (b[i] - mb); saa += (a[i] - ma) ^ 2; sbb += (b[i] - mb) ^ 2 }
    rho = saa > 0 && sbb > 0 ? sab / sqrt(saa * sbb) : 0
    best = 1e300; top = -1
    for (i = 1; i <= N; i++) { if (V[2, i] < best) { best = V[2, i]; bi = R0[i] } if (R0[i] == 1) top = V[2, i] }
    printf "Spearman rank correlation (predicted vs measured step time, %d layouts): %.3f\n", N, rho
    if (top > 0)
        printf "top-ranked layout measured %.2f ms; best measured %.2f ms (rank %d): %s (%.1f%% slower)\n",
               top, best, bi, top <= 1.05 * best ? "within 5%" : "NOT within 5%", 100 * (top / best - 1)
    else
        printf "top-ranked layout: not measured (its build or every run failed; see above)\n"
    if (top > 0 && bi != 1) print bi > "'"$work/best"'"
}' "$work/pairs"
# The medians of two layouts a few percent apart can swap between runs of
# this script; the rounds pair them (run one after the other under the same
# load), so the top pick's time over the best's, round by round, says how
# often it really was within 5%.
if [ -s "$work/best" ] && [ -s "$work/L1.meas" ]; then
    b=$(cat "$work/best")
    awk 'NR == FNR { t[$1] = $2; next } ($1 in t) && $2 > 0 { r = t[$1] / $2; n++; v[n] = r; if (r <= 1.05) k++ }
         END { if (!n) exit
               for (i = 2; i <= n; i++) for (j = i; j > 1 && v[j - 1] > v[j]; j--) { x = v[j]; v[j] = v[j - 1]; v[j - 1] = x }
               printf "round by round, top-ranked over best measured: median %.3f (%.3f to %.3f); within 5%% in %d of %d rounds\n",
                      n % 2 ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2, v[1], v[n], k, n }' \
        "$work/L1.meas" "$work/L$b.meas"
fi
