#!/usr/bin/env bash
# The same plan compiles to byte-identical output, twice into different
# folders and again over an existing output; --dump works for every pass.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
"$WEFT" compile "$PLAN" -o "$WORK/a" 2>/dev/null
"$WEFT" compile "$PLAN" -o "$WORK/b" 2>/dev/null
check "two compiles are byte-identical" diff -r "$WORK/a" "$WORK/b"
cp -r "$WORK/a" "$WORK/a0"
"$WEFT" compile "$PLAN" -o "$WORK/a" 2>/dev/null
check "recompiling over the output is byte-identical" diff -r "$WORK/a0" "$WORK/a"
check "no temporary folders left" test -z "$(ls -d "$WORK"/*.tmp-* "$WORK"/*.old-* 2>/dev/null)"
"$WEFT" compile "$PLAN" -o "$WORK/c" --set mesh.dp=4 --set batch.micro=4 2>/dev/null
"$WEFT" compile plans/gpt2_3d.lua -o "$WORK/d1" 2>/dev/null
"$WEFT" compile plans/gpt2_3d.lua -o "$WORK/d2" 2>/dev/null
check "a 3D plan (2 stage programs) compiles byte-identically" diff -r "$WORK/d1" "$WORK/d2"
check "the 3D launcher is MPMD over both stages" grep -q -- "-np 4 .*stage0.* : -np 4 .*stage1" "$WORK/d1/launch.sh"
check "a different mesh gives a different program" bash -c "! diff -q '$WORK/a/stage0.c' '$WORK/c/stage0.c' >/dev/null"
check "launch.sh runs the right rank count" grep -q -- "-np 4 " "$WORK/c/launch.sh"
check "rank table lists every rank" test "$(grep -vc '^#' "$WORK/c/ranks.txt")" = 4
for pass in load check graph buckets memory; do
  check "--dump=$pass prints the IR" bash -c "'$WEFT' check '$PLAN' --dump=$pass | head -1 | grep -q \"after pass '$pass'\""
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
