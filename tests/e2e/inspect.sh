#!/usr/bin/env bash
# weft inspect: every rank's instruction stream, --rank, Chrome trace JSON that
# reads back, SVG that is well-formed, and a usage error for a rank that does
# not exist.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
mesh=(--set mesh.dp=2 --set mesh.tp=1 --set mesh.pp=2 --set batch.micro=2 --set pipeline.schedule=1f1b)
"$WEFT" inspect "$PLAN" "${mesh[@]}" >"$WORK/all.txt"
check "text lists all 4 ranks" test "$(grep -c '^rank ' "$WORK/all.txt")" = 4
check "text shows sends with bytes" grep -q "SEND.*bytes, pp group" "$WORK/all.txt"
check "text shows bucket all-reduces" grep -q "all-reduce bucket 0 over dp group (2 ranks)" "$WORK/all.txt"
"$WEFT" inspect "$PLAN" "${mesh[@]}" --rank 3 >"$WORK/r3.txt"
check "--rank 3 shows only rank 3, with its pipeline peer" \
  test "$(grep '^rank ' "$WORK/r3.txt")" = "rank 3: stage 1, dp 1, tp 0; 1 activation slot(s); pipeline peers: stage 0 = rank 1"
"$WEFT" inspect "$PLAN" "${mesh[@]}" --format chrome -o "$WORK/t.json"
check "chrome trace reads back and matches itself" "$WEFT" trace compare "$WORK/t.json" "$WORK/t.json"
"$WEFT" inspect "$PLAN" "${mesh[@]}" --set pipeline.schedule=zb-h1 --format svg -o "$WORK/t.svg"
if command -v xmllint >/dev/null; then
  check "svg is well-formed XML" xmllint --noout "$WORK/t.svg"
else
  check "svg is complete" grep -q "</svg>" "$WORK/t.svg"
fi
check "svg has the weight-gradient colour in its legend" grep -q "weight gradient" "$WORK/t.svg"
rc=0; "$WEFT" inspect "$PLAN" "${mesh[@]}" --rank 9 2>/dev/null || rc=$?
check "a rank outside the plan is a usage error" test $rc = 2
echo "$passed passed, $failed failed"
[ $failed = 0 ]
