#!/usr/bin/env bash
# runtime_ab.sh: one generated program linked against two builds of the CPU
# runtime (libweftrt.a), run alternately in one script, so that a machine's
# load hits both alike: each run's tokens/s over the timed steps, and its CPU
# time and cycles from `perf stat` (what other jobs on the machine change
# least); medians and the B / A ratios.
#
#   bash bench/runtime_ab.sh RT_A RT_B        (two runtime build folders, each
#                                              holding weft-runtime.cmake)
#
# e.g. save the runtime before a change (cp -r build/runtime /tmp/rt_before;
# the .a and weft-runtime.cmake suffice), rebuild, then
#   bash bench/runtime_ab.sh /tmp/rt_before build/runtime
# MODEL (small | gpt2; default small), DP (ranks: 1 or 2; default 1), ROUNDS
# (4), STEPS (6 timed after 2 warm-up), PERF=0 (no perf stat).  Run from the
# repository root after scripts/build.sh; everything runs under nice.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: runtime_ab.sh RT_A RT_B" >&2; exit 2; }
WEFT=${WEFT:-build/compiler/weft}
MODEL=${MODEL:-small} DP=${DP:-1} ROUNDS=${ROUNDS:-4} STEPS=${STEPS:-6} PERF=${PERF:-1}
command -v perf >/dev/null || PERF=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/weft-runtime-ab.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
case $MODEL in small) L=4 C=256 H=4 ;; gpt2) L=12 C=768 H=12 ;; *) echo "unknown MODEL $MODEL" >&2; exit 2 ;; esac

"$WEFT" data synth -o "$WORK/data.bin" --vocab 50304 --tokens 2000000 >/dev/null
for k in A B; do
  rt=$1; [ $k = B ] && rt=$2
  rt=$(cd "$rt" && pwd)
  "$WEFT" compile plans/tiny.lua -o "$WORK/$k" --set model.layers=$L --set model.hidden=$C \
    --set model.heads=$H --set model.seq=256 --set model.vocab=50304 --set data.train="$WORK/data.bin" \
    --set train.steps=$((STEPS + 2)) --set train.log_every=1 --set batch.global=4 \
    --set batch.micro=$((4 / DP)) --set mesh.dp=$DP --set buckets.mb=25 >/dev/null 2>&1
  cmake -S "$WORK/$k" -B "$WORK/$k/build" -DWEFT_RUNTIME="$rt" >/dev/null
  nice cmake --build "$WORK/$k/build" >/dev/null
done

run() {  # run A|B -> "tokens/s cpu_seconds gigacycles"
  local pre=()
  [ "$PERF" = 1 ] && pre=(perf stat -x, -e task-clock,cycles -o "$WORK/$1.perf" --)
  nice "${pre[@]}" "$WORK/$1/launch.sh" --metrics "$WORK/$1.jsonl" >"$WORK/$1.log" 2>&1
  local cpu=0 cyc=0
  if [ "$PERF" = 1 ]; then
    cpu=$(awk -F, '$3 == "task-clock" { printf "%.2f", $1 / 1000 }' "$WORK/$1.perf")
    cyc=$(awk -F, '$3 ~ /^cycles/ { printf "%.2f", $1 / 1e9 }' "$WORK/$1.perf")
  fi
  awk -v skip=2 -v ranks_tok=$((4 * 256)) -v cpu="$cpu" -v cyc="$cyc" '
    NR > skip { sub(/.*"ms": /, ""); split($0, f, /[,}]/); ms += f[1]; n++ }
    END { printf "%.1f %s %s\n", n * ranks_tok / (ms / 1000), cpu, cyc }' "$WORK/$1.jsonl"
}
med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== $MODEL, $DP rank(s) x $((($(nproc) + DP - 1) / DP)) thread(s); A = $1, B = $2"
for r in $(seq "$ROUNDS"); do
  for k in A B; do
    read -r t s g <<<"$(run $k)"
    echo "$t" >>"$WORK/$k.t"; echo "$s" >>"$WORK/$k.s"; echo "$g" >>"$WORK/$k.g"
    echo "round $r $k: $t tok/s, $s CPU-s, $g Gcycles"
  done
done
for f in t s g; do
  a=$(med <"$WORK/A.$f") b=$(med <"$WORK/B.$f")
  name=tok/s; [ $f = s ] && name=CPU-s; [ $f = g ] && name=Gcycles
  awk -v a="$a" -v b="$b" -v n="$name" 'BEGIN { printf "median %-8s A %9.2f  B %9.2f  B/A %.3f\n", n, a, b, (a > 0 ? b / a : 0) }'
done
