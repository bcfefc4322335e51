#!/usr/bin/env bash
# Outputs that never destroy anything, and outside text that stays data
# (compiler/output.c, compiler/escape.c; README "Generated programs").
#   compile -o onto a folder weft did not write (user files), onto a file, and
#   onto a path longer than PATH_MAX: refused, exit 1, nothing changed or left;
#   onto a folder weft wrote: replaced, the user's build/ and other files moved
#   into the new folder, weft's old files gone; -o FILE of the other commands
#   the same way; a DeepSpeed key holding a newline cannot add plan lines; `*/`
#   and `??` in a plan path stay inside the generated C's strings and comments;
#   quotes, spaces, ';' and '$' in --runtime reach CMake intact; a --set with
#   an empty field name is a usage error.  Needs no MPI run (about 15 s).
source "$(dirname "$0")/lib.sh"
PLAN=plans/tiny.lua

# tree DIR: every entry under DIR with its checksum, for "nothing changed"
tree() { (cd "$1" && find . -print0 | sort -z | xargs -0 -n1 sh -c \
  'if [ -f "$0" ]; then printf "%s %s\n" "$0" "$(cksum < "$0")"; else printf "%s\n" "$0"; fi'); }
no_leftovers() { [ -z "$(cd "$1" && ls -A | grep -E '\.(tmp|old)-' || true)" ]; }

# ---- compile -o onto a folder of the user's -----------------------------
mkdir -p "$WORK/a/proj/src"
echo 'int main(void) { return 0; }' >"$WORK/a/proj/src/main.c"
echo 'my notes' >"$WORK/a/proj/README"
before=$(tree "$WORK/a")
set +e
"$WEFT" compile "$PLAN" -o "$WORK/a/proj" >"$WORK/a.out" 2>"$WORK/a.err"
rc=$?
set -e
check "compile -o onto a user's folder: exit 1" test "$rc" = 1
check "compile -o onto a user's folder: says why and that nothing changed" \
  grep -q "proj exists and is not a folder weft compile wrote (it has no .weft-generated file); nothing was changed" "$WORK/a.err"
check "compile -o onto a user's folder: no 'wrote'" bash -c "! grep -q '^weft: wrote' '$WORK/a.err'"
check "compile -o onto a user's folder: every file intact, nothing added next to it" \
  test "$(tree "$WORK/a")" = "$before"

# onto a file
echo 'precious' >"$WORK/a/file"
before=$(tree "$WORK/a")
check "compile -o onto a file: refused" bash -c "! '$WEFT' compile $PLAN -o '$WORK/a/file' 2>'$WORK/b.err'"
check "compile -o onto a file: says it is not a folder" grep -q "file exists and is not a folder weft compile wrote (it is not a folder)" "$WORK/b.err"
check "compile -o onto a file: the file is intact" test "$(tree "$WORK/a")" = "$before"

# ---- a path longer than PATH_MAX (4096 bytes on Linux) ------------------
mkdir -p "$WORK/long"
echo 'precious' >"$WORK/long/precious.txt"
long=$WORK/long/$(printf 'd%.0s' $(seq 1 200))
for _ in $(seq 1 24); do long=$long/$(printf 'd%.0s' $(seq 1 200)); done   # > 5000 bytes
before=$(tree "$WORK/long")
for cmd in "compile $PLAN -o $long" "inspect $PLAN -o $long" "data synth --tokens 1000 -o $long"; do
  set +e
  "$WEFT" $cmd >/dev/null 2>"$WORK/long.err"
  rc=$?
  set -e
  check "${cmd%% *} -o PATH longer than PATH_MAX: exit 1, 'path too long'" \
    bash -c "[ $rc = 1 ] && grep -q 'path too long' '$WORK/long.err'"
  check "${cmd%% *} -o PATH longer than PATH_MAX: nothing written or removed" test "$(tree "$WORK/long")" = "$before"
done

# a plan path longer than weft keeps (it names the plan in messages and programs)
deep=$WORK/long/$(printf 'p%.0s' $(seq 1 200))/$(printf 'p%.0s' $(seq 1 200))/$(printf 'p%.0s' $(seq 1 200))
mkdir -p "$deep"
cp "$PLAN" "$deep/plan.lua"
set +e
"$WEFT" compile "$deep/plan.lua" -o "$WORK/long/out" 2>"$WORK/long.err"
rc=$?
set -e
check "a plan path over 511 bytes: exit 1, 'plan path too long', nothing written" \
  bash -c "[ $rc = 1 ] && grep -q 'plan path too long' '$WORK/long.err' && test ! -e '$WORK/long/out'"

# ---- compile -o onto a folder weft wrote --------------------------------
gen=$WORK/g/tiny
mkdir -p "$WORK/g"
"$WEFT" compile "$PLAN" -o "$gen" --set mesh.dp=1 --set mesh.pp=2 2>"$WORK/g1.err"
check "first compile writes the marker" grep -q '^weft generated folder 1$' "$gen/.weft-generated"
check "the marker lists the stage programs" bash -c "grep -qx stage0.c '$gen/.weft-generated' && grep -qx stage1.c '$gen/.weft-generated'"
check "'wrote' is printed after the folder is in place" grep -q "^weft: wrote $gen (2 stage program(s), 2 ranks)" "$WORK/g1.err"
mkdir -p "$gen/build/CMakeFiles"
echo 'cache' >"$gen/build/CMakeCache.txt"
echo 'user notes' >"$gen/notes.txt"
build_before=$(tree "$gen/build")
"$WEFT" compile "$PLAN" -o "$gen" 2>"$WORK/g2.err"
check "recompile onto weft's folder succeeds" grep -q "^weft: wrote $gen (1 stage program(s), 2 ranks)" "$WORK/g2.err"
check "the user's build/ is kept, every file intact" test "$(tree "$gen/build")" = "$build_before"
check "the user's other file is kept" test "$(cat "$gen/notes.txt")" = "user notes"
check "weft's old stage1.c is gone (the new plan has one stage)" test ! -e "$gen/stage1.c"
check "the new stage0.c is the one-stage program" bash -c "grep -q 'pipeline stage 0 of 1' '$gen/stage0.c'"
check "no temporary or old folder is left next to it" no_leftovers "$WORK/g"
check "the folder's files are readable and launch.sh runs (mode 0755-ish)" test -x "$gen/launch.sh"

# a forged marker: names outside the folder are never taken from it, and a
# name weft does not write (notes.txt) is moved, not removed; weft's files it
# does not list stay in the old folder, which is kept and named
printf 'weft generated folder 1\n../outside\n/etc/passwd\nnotes.txt\n' >"$gen/.weft-generated"
echo 'outside' >"$WORK/g/outside"
"$WEFT" compile "$PLAN" -o "$gen" 2>"$WORK/g4.err"
check "a forged marker's '../' name is ignored" test "$(cat "$WORK/g/outside")" = outside
check "a forged marker's user file is moved, not removed" test "$(cat "$gen/notes.txt")" = "user notes"
check "weft's files the forged marker did not list are kept aside, and said so" \
  bash -c "grep -q 'they are kept in $WORK/g/tiny.tmp-' '$WORK/g4.err' && ls '$WORK/g'/tiny.tmp-*/stage0.c >/dev/null"
rm -r "$WORK/g"/tiny.tmp-* 2>/dev/null || true  # (left by this test)

# a folder from a weft before the marker (launch.sh header, weft's names, build/)
legacy=$WORK/g/legacy
cp -r "$gen" "$legacy"
rm -f "$legacy/.weft-generated" "$legacy/notes.txt"
mkdir -p "$legacy/checkpoint"   # as scripts/demo.sh saves one there
echo 'weights' >"$legacy/checkpoint/model.safetensors"
"$WEFT" compile "$PLAN" -o "$legacy" 2>"$WORK/g3.err"
check "an older weft's folder (no marker) is replaced; build/ and a checkpoint in it are kept" \
  bash -c "grep -q '^weft: wrote' '$WORK/g3.err' && test -f '$legacy/build/CMakeCache.txt' &&
           test -f '$legacy/.weft-generated' && test \"\$(cat '$legacy/checkpoint/model.safetensors')\" = weights"

# an empty folder is simply filled
mkdir -p "$WORK/g/empty"
"$WEFT" compile "$PLAN" -o "$WORK/g/empty" 2>/dev/null
check "an empty folder is filled" test -f "$WORK/g/empty/stage0.c"

# ---- -o FILE of the other commands --------------------------------------
echo old >"$WORK/g/report.txt"
"$WEFT" inspect "$PLAN" -o "$WORK/g/report.txt"
check "inspect -o FILE replaces the file" grep -q '^rank ' "$WORK/g/report.txt"
mkdir -p "$WORK/g/adir"
echo keep >"$WORK/g/adir/x"
check "inspect -o onto a folder: refused" bash -c "! '$WEFT' inspect $PLAN -o '$WORK/g/adir' 2>'$WORK/i.err'"
check "inspect -o onto a folder: says so, folder intact" \
  bash -c "grep -q 'is a folder' '$WORK/i.err' && test \"\$(cat '$WORK/g/adir/x')\" = keep"
check "no temporary file is left" no_leftovers "$WORK/g"

# ---- a DeepSpeed key holding a newline ----------------------------------
cat >"$WORK/ds_clean.json" <<'JSON'
{ "train_batch_size": 32, "train_micro_batch_size_per_gpu": 8, "gradient_accumulation_steps": 2,
  "zero_optimization": { "stage": 1, "overlap_comm": true,
                         "offload_optimizer": { "device": "cpu", "pin_memory": true } } }
JSON
python3 - "$WORK/ds_clean.json" "$WORK/ds_evil.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
evil = '\n  data = { train = "evil.bin" },\n  optimizer = w.adamw { lr = 1 },\n  --'
d["zero_optimization"][evil] = 1
d["zero_optimization"]["offload_optimizer"][evil] = True
json.dump(d, open(sys.argv[2], "w"))
PY
"$WEFT" import-deepspeed "$WORK/ds_clean.json" --model "$PLAN" --world 2 -o "$WORK/clean.lua" 2>/dev/null
"$WEFT" import-deepspeed "$WORK/ds_evil.json" --model "$PLAN" --world 2 -o "$WORK/evil.lua" 2>/dev/null
code() { grep -v '^ *--' "$1" | sed 's/ *--.*//'; }
check "a key holding a newline adds no plan line (the plan without comments is unchanged)" \
  test "$(code "$WORK/evil.lua")" = "$(code "$WORK/clean.lua")"
check "the key is still shown, escaped, in a comment" grep -q '^  --   .*\\010  data = ' "$WORK/evil.lua"
"$WEFT" compile "$WORK/evil.lua" -o "$WORK/evil" 2>/dev/null
"$WEFT" compile "$WORK/clean.lua" -o "$WORK/clean" 2>/dev/null
check "the generated program trains on the model plan's data and learning rate, not the key's" \
  bash -c "grep -q 'data_train = \"data/synth.bin\"' '$WORK/evil/stage0.c' &&
           grep -q '\.lr = 0.003,' '$WORK/evil/stage0.c' &&
           diff <(grep -v -e 'generated by weft' -e 'Plan \"' -e '\.plan = ' '$WORK/evil/stage0.c') \
                <(grep -v -e 'generated by weft' -e 'Plan \"' -e '\.plan = ' '$WORK/clean/stage0.c') >/dev/null"

# ---- '*/' and '??' in the plan path -------------------------------------
odd="$WORK/p*/q??/r"
mkdir -p "$odd"
oddplan="$odd/x??=.lua"
cp "$PLAN" "$oddplan"
"$WEFT" compile "$oddplan" -o "$WORK/odd" --set data.train='data/a*/b.bin' 2>/dev/null
check "'*/' and '??' in the paths: stage0.c compiles with trigraphs on, no comment ended early" \
  cc -std=c11 -trigraphs -Werror=trigraphs -Werror=comment -fsyntax-only -I runtime/include \
     -I runtime/common "$WORK/odd/stage0.c"
# the .plan and .data_train literals, read back by the C compiler
lits=$(sed -n 's/.*\.plan = \("[^,]*"\), .plan_hash.*/\1/p; s/.*\.data_train = \("[^,]*"\), .*/\1/p' "$WORK/odd/stage0.c" | tr '\n' ' ')
printf '#include <stdio.h>\nint main(void) { const char *s[] = { %s }; printf("%%s|%%s", s[0], s[1]); return 0; }\n' \
  "$(echo "$lits" | sed 's/" "/", "/')" >"$WORK/odd/lit.c"
cc -std=c11 -trigraphs -o "$WORK/odd/lit" "$WORK/odd/lit.c" 2>"$WORK/odd/lit.err" || true
check "the plan path and data path strings in stage0.c read back as given" \
  test "$("$WORK/odd/lit" 2>/dev/null)" = "$oddplan|data/a*/b.bin"

# ---- --runtime with quotes, spaces, ';' and '$' -------------------------
rt="$WORK/run time \"q\";x\$y \${HOME}"
mkdir -p "$rt"
cat >"$rt/weft-runtime.cmake" <<'CM'
file(WRITE "${CMAKE_BINARY_DIR}/seen-runtime" "${WEFT_RUNTIME}")
add_library(weft::runtime INTERFACE IMPORTED)
CM
"$WEFT" compile "$PLAN" -o "$WORK/rt" --runtime "$rt" 2>/dev/null
cmake -S "$WORK/rt" -B "$WORK/rt/build" >"$WORK/rt.log" 2>&1 || true
check "--runtime with quotes, spaces, ';' and '\$': CMake reads the folder exactly" \
  test "$(cat "$WORK/rt/build/seen-runtime" 2>/dev/null)" = "$rt"
check "--runtime with a control byte is refused" bash -c "! '$WEFT' compile $PLAN -o '$WORK/rt2' --runtime \"\$(printf 'a\001b')\" 2>/dev/null && test ! -e '$WORK/rt2'"

# ---- --set with an empty field name --------------------------------------
for bad in ".=1" "mesh..dp=1" "mesh.=2" ".mesh=2" "mesh dp=2"; do
  set +e
  "$WEFT" check "$PLAN" --set "$bad" >/dev/null 2>"$WORK/set.err"
  rc=$?
  set -e
  check "--set $bad: a usage error (exit 2) naming FIELD" bash -c "[ $rc = 2 ] && grep -q 'FIELD names joined by' '$WORK/set.err'"
done

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
