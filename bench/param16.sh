#!/usr/bin/env bash
# 16-bit working parameters (plan.param_storage) against the float arena, bf16,
# one rank, 4 layers of hidden 512, seq 128, vocab 4096 (bench/step.sh's
# vocabulary of 50304 with hidden 256 would keep the float arena: its LM head
# widens more floats than 16 bits save, compiler/param16.c):
# tokens/s, planned and allocated bytes and peak RSS of each, the two run
# alternately (ROUNDS times) so that a loaded machine slows both alike, and
# the ratio of their best tokens/s.  Run from the repository root after
# scripts/build.sh.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
STEPS=${STEPS:-6}
ROUNDS=${ROUNDS:-2}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
"$WEFT" data synth -o "$WORK/data.bin" --vocab 4096 --tokens 1000000 >/dev/null
model=(--set model.layers=4 --set model.hidden=512 --set model.heads=8 --set model.seq=128
       --set model.vocab=4096 --set data.train="$WORK/data.bin" --set train.steps=$STEPS
       --set train.log_every=1000 --set batch.global=4 --set batch.micro=4 --set buckets.mb=25
       --set mesh.dp=1 --set precision=bf16)
for s in fp32 auto; do
  "$WEFT" compile plans/tiny.lua -o "$WORK/$s" "${model[@]}" --set param_storage=$s 2>/dev/null
  cmake -S "$WORK/$s" -B "$WORK/$s/build" >/dev/null && cmake --build "$WORK/$s/build" >/dev/null
done
for r in $(seq "$ROUNDS"); do
  for s in fp32 auto; do
    "$WORK/$s/launch.sh" >"$WORK/$s.$r.log" 2>&1
    echo "== param_storage = $s, round $r"
    grep -E "^(throughput|peak RSS)" "$WORK/$s.$r.log"
    grep -q "^model state.*16-bit" <("$WEFT" check plans/tiny.lua "${model[@]}" --set param_storage=$s) &&
      echo "(16-bit working parameters)"
  done
done
best() { cat "$WORK/$1".*.log | sed -n 's/^throughput: \([0-9.]*\) tokens.*/\1/p' | sort -g | tail -n 1; }
awk -v a="$(best auto)" -v f="$(best fp32)" 'BEGIN { printf "best tokens/s: fp32 arena %s, 16-bit %s (%.3fx)\n", f, a, a / f }'
