#!/usr/bin/env bash
# --profile: the run summary gives each rank's time per op class per step.
# The classes partition the measured time (one clock switched between them),
# so on every rank the shares add up to 100% (8 classes, each rounded to a
# whole percent: within 4) and the milliseconds to the summary's ms/step (the
# same window, timed by another clock: within 2% + 1 ms); each class the tiny
# GPT runs is nonzero, comm wait included under dp 2 (bucket all-reduces);
# without the flag there is no profile line.  A VLM's stage 0 adds its
# encoder's line (below).
source "$(dirname "$0")/lib.sh"

data=$(make_data)
build_plan prof plans/tiny.lua --set data.train="$data" --set train.steps=3
check "generated code names the classifier's class before the (CPU: fused, chunked) LM head" \
  grep -B1 -q "wf_lmhead_xent_chunked" <(grep -A1 "wf_prof(c, WF_PROF_CLASSIFIER)" "$WORK/prof/stage0.c")
"$WORK/prof/launch.sh" --profile >"$WORK/out.txt" 2>&1 || { cat "$WORK/out.txt"; exit 1; }
"$WORK/prof/launch.sh" >"$WORK/plain.txt" 2>&1
cat "$WORK/out.txt" | grep -E "^(done|profile)"
ms=$(sed -n 's/^done: .*(\([0-9.]*\) ms\/step).*/\1/p' "$WORK/out.txt")
for r in 0 1; do
  line=$(grep "^profile rank $r," "$WORK/out.txt" || true)
  check "rank $r has a profile line" test -n "$line"
  check "rank $r: shares add up to 100 (+-4)" awk -v l="$line" 'BEGIN {
    n = split(l, f, "("); s = 0; for (i = 3; i <= n; i++) s += f[i] + 0; exit !(s >= 96 && s <= 104) }'
  check "rank $r: ms add up to the step's $ms ms (2% + 1 ms)" awk -v l="$line" -v ms="$ms" 'BEGIN {
    sub(/^[^:]*:/, "", l); n = split(l, f, ","); s = 0
    for (i = 1; i <= n; i++) { split(f[i], w, " "); s += w[length(w) - 1] }
    d = s - ms; if (d < 0) d = -d; exit !(d <= 0.02 * ms + 1) }'
  for k in gemm attention norm elementwise classifier optimizer "comm wait"; do
    check "rank $r: $k is nonzero" awk -v l="$line" -v k="$k" 'BEGIN {
      i = index(l, " " k " "); if (!i) exit 1; split(substr(l, i + length(k) + 2), w, " "); exit !(w[1] + 0 > 0) }'
  done
done
check "no profile line without --profile" bash -c "! grep -q '^profile' '$WORK/plain.txt'"

# A VLM at pp 2: stage 0 runs the vision encoder and projector, whose ops the
# generated code marks (WF_PROF_ENCODER); rank 0 adds a line with their time,
# a part of its op compute (gemm .. classifier), so its ms are at most that
# compute's and its shares at most 100; rank 1 (no encoder) has none.
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq 24 --count 64 --seed 5 >/dev/null
build_plan vlm plans/vlm_tiny.lua --set data.train="$WORK/vlm.bin" --set train.steps=3 --set mesh.pp=2 \
  --set cluster.devices_per_node=2 --set batch.micro=8
check "vlm: the encoder's ops marked on stage 0 only" bash -c "
  grep -q 'WF_PROF_GEMM | WF_PROF_ENCODER' '$WORK/vlm/stage0.c' && ! grep -q WF_PROF_ENCODER '$WORK/vlm/stage1.c'"
"$WORK/vlm/launch.sh" --profile >"$WORK/vlm.txt" 2>&1 || { cat "$WORK/vlm.txt"; exit 1; }
enc=$(grep "^profile rank 0 encoder:" "$WORK/vlm.txt" || true)
echo "$enc"
check "vlm: rank 0 has an encoder line" test -n "$enc"
check "vlm: rank 1 (no encoder) has none" bash -c "! grep -q '^profile rank 1 encoder' '$WORK/vlm.txt'"
check "vlm: the encoder's ms within rank 0's compute, its shares in (0, 100]" awk -v l="$enc" 'BEGIN {
  if (!match(l, /projector [0-9.]+ ms/)) exit 1; e = substr(l, RSTART + 10, RLENGTH - 13) + 0
  if (!match(l, /\([0-9.]+ ms\/step\)/)) exit 1; t = substr(l, RSTART + 1, RLENGTH - 10) + 0
  if (!match(l, /[0-9.]+% of the step/)) exit 1; a = substr(l, RSTART) + 0
  if (!match(l, /[0-9.]+% of its compute/)) exit 1; b = substr(l, RSTART) + 0
  exit !(e > 0 && e <= t + 0.01 && a > 0 && a <= b && b <= 100.05) }'
echo "$passed passed, $failed failed"
[ $failed = 0 ]
