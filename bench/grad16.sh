#!/usr/bin/env bash
# 16-bit weight gradients on the CPU backend (compiler/grad16.c,
# runtime/common/grad16.c) against the float gradient arena (WEFT_GRAD16=0),
# side by side, bf16: for each plan, `weft check`'s gradient bytes (stage 0)
# and bytes per parameter, the run's allocated = planned bytes and peak RSS
# (rank 0, the run's last log line), and tokens/s, the two alternating ROUNDS
# times so that both see the same machine load; the last column is the ratio
# 16-bit / float (tiny_z1: ZeRO-1, fp32 dp sums; tiny_c16, tiny_z1c16: 16-bit dp sums, plan.dp_comm, where
# the stored bits are sent as they are; tiny_z3: ZeRO-3; vlm_frozen:
# vlm_tiny.lua with its vision encoder frozen, no gradients there).  Run from the repository root after
# scripts/build.sh; ONLY="name ..." runs those rows.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
export WEFT_RUNTIME=${WEFT_RUNTIME:-$PWD/build/runtime}
STEPS=${STEPS:-20}
ROUNDS=${ROUNDS:-2}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
source "$(dirname "$0")/storage_ab.sh"
"$WEFT" data synth -o "$WORK/synth.bin" --tokens 200000 --vocab 256 --branch 4 --seed 7 >/dev/null
"$WEFT" data synth -o "$WORK/v4k.bin" --vocab 4096 --tokens 1000000 >/dev/null
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq 24 --count 512 --seed 5 >/dev/null
# name | plan and overrides (bench/param16.sh's model for "h512": 1 rank, vocab 4096)
rows=(
  "tiny|plans/tiny.lua --set data.train=$WORK/synth.bin"
  "tiny_dp1|plans/tiny.lua --set data.train=$WORK/synth.bin --set mesh.dp=1"
  "tiny_c16|plans/tiny.lua --set data.train=$WORK/synth.bin --set dp_comm=bf16"
  "tiny_z1|plans/tiny.lua --set data.train=$WORK/synth.bin --set zero=1"
  "tiny_z1c16|plans/tiny.lua --set data.train=$WORK/synth.bin --set dp_comm=bf16 --set zero=1"
  "tiny_z3|plans/tiny.lua --set data.train=$WORK/synth.bin --set zero=3"
  "vlm_frozen|plans/vlm_tiny.lua --set data.train=$WORK/vlm.bin --set model.freeze.vision=true --set mesh.dp=1"
  "h512|plans/tiny.lua --set model.layers=4 --set model.hidden=512 --set model.heads=8 --set model.seq=128 --set model.vocab=4096 --set data.train=$WORK/v4k.bin --set batch.global=4 --set batch.micro=4 --set buckets.mb=25 --set mesh.dp=1"
)
per_param() { sed -n 's/^model state[^:]*: \([0-9.]*\) B per parameter.*gradients \([0-9][0-9.]*\).*/\1 (gradients \2)/p' "$1"; }
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores; $STEPS steps, $ROUNDS rounds, bf16"
for r in "${rows[@]}"; do
  name=${r%%|*}
  [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $name "* ]] || continue  # ONLY="tiny h512": those rows
  read -r -a args <<<"${r#*|}"
  for v in 0 auto; do ab_build WEFT_GRAD16 "$name" $v "${args[@]}"; done
  declare -A tok=()
  ab_rounds "$name" 0 auto
  t0=$(best "${tok[0]}") t1=$(best "${tok[auto]}")
  echo "== $name              float gradients | 16-bit gradients | ratio"
  echo "gradients (check)     $(row gradients "$WORK/$name-0.check") | $(row gradients "$WORK/$name-auto.check")"
  echo "B per param (check)   $(per_param "$WORK/$name-0.check") | $(per_param "$WORK/$name-auto.check")"
  echo "total (check)         $(row total "$WORK/$name-0.check") | $(row total "$WORK/$name-auto.check")"
  echo "allocated, MiB        $(alloc "$WORK/$name-0.log") | $(alloc "$WORK/$name-auto.log")"
  echo "peak RSS rank 0, MiB  $(rss "$WORK/$name-0.log") | $(rss "$WORK/$name-auto.log") | $(ratio "$(rss "$WORK/$name-auto.log")" "$(rss "$WORK/$name-0.log")")"
  echo "tokens/s (best of $ROUNDS)   $t0 | $t1 | $(ratio "$t1" "$t0")   (each:${tok[0]} |${tok[auto]})"
  unset tok
done
