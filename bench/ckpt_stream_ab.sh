#!/usr/bin/env bash
# ckpt_stream_ab.sh: the save of one small plan under two builds of weft
# (OLD: the save that made stage-sized copies; NEW: the streamed one),
# alternated ROUNDS times in one run so that the shared machine's load falls
# on both alike.  Prints each build's median save time (the runtime's own
# "saved to DIR (X ms)") and median CPU seconds of the whole --steps STEPS run
# (startup included, the same for both), and the ratios new / old.
#   OLD=/path/to/old/build/compiler/weft NEW=build/compiler/weft [ROUNDS=5] [STEPS=0] bash bench/ckpt_stream_ab.sh [MESH...]
# Every round the two builds must write byte-identical files, or where one
# writes a pipelined plan's sharded set, bit-identical tensors (else it stops).
# MESH: weft --set options (default: dp 2 with ZeRO-1, the moments sharded).
set -euo pipefail
OLD=${OLD:?set OLD to the old weft binary} NEW=${NEW:?set NEW to the new weft binary}
ROUNDS=${ROUNDS:-5} STEPS=${STEPS:-0}  # STEPS: train this many steps first (moments not zero)
PLAN=${PLAN:-plans/tiny.lua}
mesh=("$@")
[ ${#mesh[@]} -gt 0 ] || mesh=(--set zero=1)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ckpt-ab.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
"$NEW" data synth -o "$WORK/d.bin" --tokens 200000 --vocab 256 --seed 7 >/dev/null
set=(--set data.train="$WORK/d.bin" --set model.layers=4 --set model.hidden=256 --set model.seq=64
     --set batch.micro=4 --set batch.global=16 "${mesh[@]}")
for v in old new; do
  bin=$OLD; [ $v = new ] && bin=$NEW
  "$bin" compile "$PLAN" -o "$WORK/$v" "${set[@]}" >/dev/null
  cmake -S "$WORK/$v" -B "$WORK/$v/build" >/dev/null && cmake --build "$WORK/$v/build" -j2 >/dev/null
done
for i in $(seq 1 "$ROUNDS"); do
  for v in old new; do
    /usr/bin/time -f "%U %S" -o "$WORK/$v.time" "$WORK/$v/launch.sh" --steps "$STEPS" --save "$WORK/$v.ckpt" >"$WORK/$v.log"
    ms=$(sed -n 's/^checkpoint: step '"$STEPS"' saved to .* (\([0-9.]*\) ms)$/\1/p' "$WORK/$v.log")
    echo "$ms $(awk '{ print $1 + $2 }' "$WORK/$v.time")" >>"$WORK/$v.runs"
  done
  # the same files; or, where one build writes a pipelined plan's sharded set
  # (Hugging Face's, one shard a stage) and the other one joined file, the
  # same tensors bit for bit (ckpt diff reads both forms)
  if [ -f "$WORK/old.ckpt/model.safetensors" ] && [ -f "$WORK/new.ckpt/model.safetensors" ]; then
    cmp -s "$WORK/old.ckpt/model.safetensors" "$WORK/new.ckpt/model.safetensors" &&
      cmp -s "$WORK/old.ckpt/optimizer.safetensors" "$WORK/new.ckpt/optimizer.safetensors"
  else
    "$NEW" ckpt diff "$WORK/old.ckpt/model.safetensors" "$WORK/new.ckpt/model.safetensors" >/dev/null &&
      "$NEW" ckpt diff "$WORK/old.ckpt/optimizer.safetensors" "$WORK/new.ckpt/optimizer.safetensors" >/dev/null
  fi || { echo "the two builds wrote different tensors" >&2; exit 1; }
done
median() { sort -g | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
for v in old new; do
  printf '%s: save %s ms, run %s CPU s (median of %d)\n' $v "$(cut -d' ' -f1 "$WORK/$v.runs" | median)" \
    "$(cut -d' ' -f2 "$WORK/$v.runs" | median)" "$ROUNDS"
done
awk -v a="$(cut -d' ' -f1 "$WORK/old.runs" | median)" -v b="$(cut -d' ' -f1 "$WORK/new.runs" | median)" \
    -v c="$(cut -d' ' -f2 "$WORK/old.runs" | median)" -v d="$(cut -d' ' -f2 "$WORK/new.runs" | median)" \
    'BEGIN { printf "new / old: save time %.2f, run CPU %.2f\n", b / a, d / c }'
