#!/usr/bin/env bash
# tests/kernels/run.sh WEFT
#
# Bad user kernels (README.md, "User kernels"): every tests/kernels/*.lua
# plan applies a kernel from src/ that breaks one rule, and its first line is
#   -- expect: FILE:LINE[:COL]: message
# which must appear in stderr after "weft: error: ".  Each must exit 1 with
# nothing on stdout, leave the output folder exactly as it was (a sentinel
# file) with no DIR.tmp-* next to it, and leave nothing in TMPDIR (the
# gradient proof's temporary folder is removed).  Positive controls: a
# correct kernel compiles, its proof leaving TMPDIR empty too; a wrong
# gradient compiles under --no-gradcheck, with a warning.
set -u
weft=${1:?usage: tests/kernels/run.sh path/to/weft}
case $weft in /*) ;; *) weft=$PWD/$weft ;; esac
cd "$(dirname "$0")/../.." || exit 2
scratch=$(mktemp -d "${TMPDIR:-/tmp}/weft-kernel-tests.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT

passed=0 failed=0
pass() { printf 'ok   %s\n' "$1"; passed=$((passed + 1)); }
fail() { printf 'FAIL %s: %s\n' "$1" "$2"; failed=$((failed + 1)); }

for plan in tests/kernels/*.lua; do
    name=$(basename "$plan" .lua)
    expect=$(head -n 1 "$plan" | sed -n 's/^-- expect: //p')
    work=$scratch/$name
    mkdir -p "$work/out" "$work/tmp"
    echo "previous output of $name" > "$work/out/SENTINEL"
    TMPDIR=$work/tmp timeout 120 "$weft" compile "$plan" -o "$work/out" > "$work/stdout" 2> "$work/stderr"
    rc=$?
    problems=()
    [ -n "$expect" ] || problems+=("first line is not '-- expect: <message>'")
    [ "$rc" -eq 1 ] || problems+=("exit code $rc, expected 1")
    [ -s "$work/stdout" ] && problems+=("stdout is not empty")
    grep -qF -- "weft: error: $expect" "$work/stderr" \
        || problems+=("expected message not in stderr (got: $(head -n 1 "$work/stderr" | cut -c 1-300))")
    [ "$(ls -A "$work/out")" = SENTINEL ] && [ "$(cat "$work/out/SENTINEL")" = "previous output of $name" ] \
        || problems+=("the output folder changed")
    [ -z "$(cd "$work" && ls -d out.tmp-* out.old-* 2> /dev/null)" ] || problems+=("left a temporary output folder")
    [ -z "$(ls -A "$work/tmp")" ] || problems+=("left in TMPDIR: $(ls -A "$work/tmp" | tr '\n' ' ')")
    if [ ${#problems[@]} -eq 0 ]; then pass "$name"; else fail "$name" "${problems[*]}"; fi
done

# ---- positive controls ------------------------------------------------------
good=$scratch/good
mkdir -p "$good/src" "$good/tmp"
cp tests/kernels/src/swish.c "$good/src/"
sed -e '1d' tests/kernels/syntax_error.lua | sed 's#src/syntax_error.c#src/swish.c#' > "$good/swish.lua"
if TMPDIR=$good/tmp "$weft" compile "$good/swish.lua" -o "$good/out" > /dev/null 2> "$good/stderr" \
   && grep -q 'swish_fwd(x_\[j\])' "$good/out/stage0.c" && [ -z "$(ls -A "$good/tmp")" ]; then
    pass "control: a correct kernel compiles, is called in stage0.c, its proof leaves TMPDIR empty"
else
    fail "control: a correct kernel compiles" "$(head -n 1 "$good/stderr")"
fi
# constants (a const table), loops and local arrays are the kernel's own
cp tests/kernels/src/poly.c "$good/src/"
sed -e 's/swish_fwd/poly_fwd/; s/swish_bwd/poly_bwd/; s#src/swish.c#src/poly.c#' "$good/swish.lua" > "$good/poly.lua"
if TMPDIR=$good/tmp "$weft" compile "$good/poly.lua" -o "$good/poly" > /dev/null 2> "$good/poly.err" \
   && grep -q 'static const float COEF\[3\]' "$good/poly/stage0.c" && [ -z "$(ls -A "$good/tmp")" ]; then
    pass "control: a kernel with a const table, a loop and a local array compiles"
else
    fail "control: a kernel with a const table" "$(head -n 1 "$good/poly.err")"
fi
# the cost counted from the AST: swish_fwd is x / (1 + expf(-x)): '/', '+' and
# one math call = 3; swish_bwd 1 / (1 + expf(-x)) = 3 more, then
# dy * s * (1 + x * (1 - s)) = 5; bytes: read x, write y (8); read x and dy,
# update dx (16)
if "$weft" check "$good/swish.lua" 2> /dev/null | grep -q 'per value 3 / 8 FLOP, 8 / 16 B'; then
    pass "control: weft check counts swish's FLOPs from its AST (3 / 8) and its bytes (8 / 16)"
else
    fail "control: weft check's kernel line" "$("$weft" check "$good/swish.lua" 2>&1 | grep kernels)"
fi
if "$weft" compile tests/kernels/wrong_gradient.lua -o "$good/nocheck" --no-gradcheck > /dev/null 2> "$good/nocheck.err" \
   && grep -q 'warning: --no-gradcheck' "$good/nocheck.err"; then
    pass "control: --no-gradcheck compiles the wrong gradient, with a warning"
else
    fail "control: --no-gradcheck" "$(head -n 1 "$good/nocheck.err")"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
