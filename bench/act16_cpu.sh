#!/usr/bin/env bash
# 16-bit activation storage on the CPU backend (compiler/act16.c,
# runtime/cpu/stage16.h) against float storage (WEFT_ACT16=0), side by side:
# for each plan, `weft check`'s activation and activation-gradient bytes
# (stage 0), the run's allocated = planned bytes and peak RSS (rank 0, the
# run's last log line), and tokens/s, the two storages alternating ROUNDS
# times so that both see the same machine load; the last column is the ratio
# 16-bit / float.  Run from the repository root after scripts/build.sh.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
export WEFT_RUNTIME=${WEFT_RUNTIME:-$PWD/build/runtime}
STEPS=${STEPS:-20}
ROUNDS=${ROUNDS:-2}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/storage_ab.sh"
"$WEFT" data synth -o "$WORK/synth.bin" --tokens 200000 --vocab 256 --branch 4 --seed 7 >/dev/null
"$WEFT" data synth -o "$WORK/big.bin" --vocab 50304 --tokens 2000000 >/dev/null
# name | plan and overrides (bench/step.sh's model for "step": 1 rank, vocab 50304)
rows=(
  "tiny|plans/tiny.lua --set data.train=$WORK/synth.bin"
  "gpt2_3d|plans/gpt2_3d.lua --set data.train=$WORK/synth.bin"
  "step|plans/tiny.lua --set model.layers=4 --set model.hidden=256 --set model.heads=4 --set model.seq=256 --set model.vocab=50304 --set data.train=$WORK/big.bin --set batch.global=8 --set batch.micro=8 --set mesh.dp=1 --set buckets.mb=25"
)
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $STEPS steps, $ROUNDS rounds, bf16"
for r in "${rows[@]}"; do
  name=${r%%|*}
  read -r -a args <<<"${r#*|}"
  for v in 0 1; do ab_build WEFT_ACT16 "$name" $v "${args[@]}"; done
  declare -A tok=()
  ab_rounds "$name" 0 1
  t0=$(best "${tok[0]}") t1=$(best "${tok[1]}")
  echo "== $name              float storage | 16-bit storage | ratio"
  echo "activations (check)   $(row activations "$WORK/$name-0.check") | $(row activations "$WORK/$name-1.check")"
  echo "act. grads (check)    $(row "act. grads" "$WORK/$name-0.check") | $(row "act. grads" "$WORK/$name-1.check")"
  echo "scratch (check)       $(row scratch "$WORK/$name-0.check") | $(row scratch "$WORK/$name-1.check")"
  echo "total (check)         $(row total "$WORK/$name-0.check") | $(row total "$WORK/$name-1.check")"
  echo "allocated, MiB        $(alloc "$WORK/$name-0.log") | $(alloc "$WORK/$name-1.log")"
  echo "peak RSS rank 0, MiB  $(rss "$WORK/$name-0.log") | $(rss "$WORK/$name-1.log") | $(ratio "$(rss "$WORK/$name-1.log")" "$(rss "$WORK/$name-0.log")")"
  echo "tokens/s (best of $ROUNDS)   $t0 | $t1 | $(ratio "$t1" "$t0")   (each:${tok[0]} |${tok[1]})"
  unset tok
done
