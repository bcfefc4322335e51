#!/usr/bin/env bash
# OpenMP's wait policy for one CPU rank with a thread a core (compiler/omp_wait.c):
# ACTIVE (idle threads spin) against PASSIVE (they sleep), alternated round by
# round, alone and beside one busy process (a shell loop on the same cores),
# on the two GPTs of bench/cpu_compare.sh (fp32, B 4 x T 256, vocab 50304).
# Prints each round's mean step time (steps after the first two) and the
# medians' ratio ACTIVE / PASSIVE.
#
#   bash bench/omp_wait.sh      (from the repository root, after scripts/build.sh)
#
# ROUNDS (3), STEPS (8 timed), MODELS ("small gpt2"), BUSY ("0 1": alone, beside one busy process).
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/compiler/weft}
ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-8} MODELS=${MODELS:-"small gpt2"} BUSY=${BUSY:-"0 1"}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/weft-omp-wait.XXXXXX")
busy_pid=
trap '[ -z "$busy_pid" ] || kill "$busy_pid" 2>/dev/null; rm -rf "$WORK"' EXIT
"$WEFT" data synth -o "$WORK/data.bin" --vocab 50304 --tokens 2000000 >/dev/null
for m in $MODELS; do
  case $m in small) set -- 4 256 4 ;; gpt2) set -- 12 768 12 ;; *) echo "unknown model $m" >&2; exit 1 ;; esac
  "$WEFT" compile plans/tiny.lua -o "$WORK/$m" --set model.layers=$1 --set model.hidden=$2 --set model.heads=$3 \
    --set model.seq=256 --set model.vocab=50304 --set data.train="$WORK/data.bin" --set train.steps=$((STEPS + 2)) \
    --set train.log_every=1 --set batch.global=4 --set batch.micro=4 --set mesh.dp=1 >/dev/null
  cmake -S "$WORK/$m" -B "$WORK/$m/build" >/dev/null && nice cmake --build "$WORK/$m/build" >/dev/null
done
step_ms() {  # step_ms MODEL POLICY: mean ms of the timed steps
  OMP_WAIT_POLICY=$2 "$WORK/$1/launch.sh" --metrics "$WORK/m.jsonl" >"$WORK/run.log" 2>&1
  awk 'NR > 2 { sub(/.*"ms": /, ""); split($0, f, /[,}]/); s += f[1]; n++ } END { printf "%.1f\n", s / n }' "$WORK/m.jsonl"
}
med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for r in $(seq "$ROUNDS"); do
  for m in $MODELS; do
    for b in $BUSY; do
      line="round $r $m busy=$b:"
      for pol in PASSIVE ACTIVE; do
        [ "$b" = 0 ] || { (while :; do :; done) & busy_pid=$!; }
        t=$(step_ms "$m" $pol); echo "$t" >>"$WORK/$m.$b.$pol"
        [ -z "$busy_pid" ] || { kill "$busy_pid"; wait "$busy_pid" 2>/dev/null || true; busy_pid=; }
        line="$line $pol $t ms"
      done
      echo "$line"
    done
  done
done
echo "== medians (ms a step), ACTIVE over PASSIVE"
for m in $MODELS; do
  for b in $BUSY; do
    p=$(med <"$WORK/$m.$b.PASSIVE"); a=$(med <"$WORK/$m.$b.ACTIVE")
    awk -v m="$m" -v b="$b" -v p="$p" -v a="$a" 'BEGIN {
      printf "%-6s %-22s PASSIVE %8.1f  ACTIVE %8.1f  x%.3f\n", m, b == 0 ? "alone" : "beside a busy process", p, a, a / p }'
  done
done
