#!/usr/bin/env bash
# Step benchmark: tokens/s of the generated program for a GPT-2-style model
# (4 layers, hidden 256, 4 heads, seq 256, vocab 50304) on one rank, the share
# of step time in GEMM, achieved GFLOP/s over the whole step against the sgemm
# rate OpenBLAS reaches here on the same shapes, and 2 ranks vs 1 for the same
# global batch.  Run from the repository root after scripts/build.sh.
#
# BASE=OTHER/build/compiler/weft compares two builds instead (e.g. a worktree
# of an older commit): both compile the same plans, and their programs run
# alternately, ROUNDS (3) rounds; prints each run's tokens/s and the medians'
# ratio, this build over BASE.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
STEPS=${STEPS:-12}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$WEFT" data synth -o "$WORK/data.bin" --vocab 50304 --tokens 2000000 >/dev/null
model=(--set model.layers=4 --set model.hidden=256 --set model.heads=4 --set model.seq=256
       --set model.vocab=50304 --set data.train="$WORK/data.bin" --set train.steps=$STEPS
       --set train.log_every=1000 --set batch.global=8 --set buckets.mb=25)
run() {  # run NAME DP MICRO [WEFT]
  "${4:-$WEFT}" compile plans/tiny.lua -o "$WORK/$1" "${model[@]}" --set mesh.dp=$2 --set batch.micro=$3 2>/dev/null
  cmake -S "$WORK/$1" -B "$WORK/$1/build" >/dev/null && cmake --build "$WORK/$1/build" >/dev/null
  "$WORK/$1/launch.sh" | grep -E "^(blas|done|throughput)"
}
if [ -n "${BASE:-}" ]; then
  tps() { "$WORK/$1/launch.sh" | sed -n 's/^throughput: \([0-9.]*\) tokens\/s.*/\1/p'; }
  med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  for cfg in "one 1 8" "two 2 4"; do
    read -r name dp micro <<<"$cfg"
    run "$name.base" "$dp" "$micro" "$BASE" >/dev/null
    run "$name.this" "$dp" "$micro" >/dev/null
    for r in $(seq "${ROUNDS:-3}"); do
      b=$(tps "$name.base"); t=$(tps "$name.this")
      echo "$b" >>"$WORK/$name.base.t"; echo "$t" >>"$WORK/$name.this.t"
      echo "round $r, $dp rank(s): base $b tokens/s, this build $t"
    done
    mb=$(med <"$WORK/$name.base.t"); mt=$(med <"$WORK/$name.this.t")
    awk -v b="$mb" -v t="$mt" -v n="$dp" 'BEGIN { printf "%s rank(s), medians: base %.1f, this build %.1f tokens/s: %.3fx\n", n, b, t, t / b }'
  done
  exit 0
fi
echo "== sgemm here (same kernel selection as the runtime), 2 threads"
OPENBLAS_NUM_THREADS=2 build/bench/sgemm_rate 2048 256 50304 | grep -E "core|mean|lm head|square"
echo "== sgemm, 1 thread"
OPENBLAS_NUM_THREADS=1 build/bench/sgemm_rate 1024 256 50304 | grep -E "mean"
echo "== 1 rank, micro 8 x accumulation 1 (global batch 8 x 256 tokens)"
run one 1 8
echo "== 2 ranks, micro 4 each (same global batch)"
run two 2 4
