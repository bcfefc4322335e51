#!/usr/bin/env bash
# tests/plans/run.sh WEFT
#
# Runs every bad plan in tests/plans/*.lua through `WEFT compile PLAN -o DIR`
# from the repository root.  The first line of each plan is
#   -- expect: tests/plans/NAME.lua:LINE: message
# and that text must appear in stderr.  Each plan must also
#   - exit with 1 (a plan error), within 5 s, with nothing on stdout;
#   - report "weft: error: " followed by the plan's path and line;
#   - print at most 8 KiB on stderr;
#   - leave the output folder exactly as it was (a sentinel file, unchanged)
#     and no DIR.tmp-* or DIR.old-* folder next to it.
# Then a few positive controls: plans/tiny.lua compiles, and the command
# line's exit codes (--help 0, unknown command 2, check without a plan 2).
#
# Prints `ok   NAME` or `FAIL NAME: reason` per check and ends with
# `N passed, M failed`; exits 1 if anything failed.
set -u

if [ $# -ne 1 ]; then
    echo "usage: tests/plans/run.sh path/to/weft" >&2
    exit 2
fi
weft=$1
case $weft in /*) ;; *) weft=$PWD/$weft ;; esac
if [ ! -x "$weft" ]; then
    echo "run.sh: $1 is not an executable" >&2
    exit 2
fi
cd "$(dirname "$0")/../.." || exit 2

STDERR_MAX=8192  # bytes: a message is cut at 4 KiB
LIMIT_MS=5000  # of CPU time (user + system): a loaded machine must not fail a good plan
scratch=$(mktemp -d "${TMPDIR:-/tmp}/weft-plan-tests.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT

passed=0
failed=0
pass() { printf 'ok   %s\n' "$1"; passed=$((passed + 1)); }
fail() { printf 'FAIL %s: %s\n' "$1" "$2"; failed=$((failed + 1)); }

# One line of stderr for a failure message.
first_line() { head -n 1 "$1" | cut -c 1-300; }

for plan in tests/plans/*.lua; do
    name=$(basename "$plan" .lua)
    expect=$(head -n 1 "$plan" | sed -n 's/^-- expect: //p')
    if [ -z "$expect" ]; then
        fail "$name" "first line is not '-- expect: <message>'"
        continue
    fi

    # A fresh folder per plan: work/out holds the previous output (a sentinel);
    # compile's own temporary folders would appear next to it in work/.
    work=$scratch/$name
    out=$work/out
    mkdir -p "$out"
    printf 'previous output of %s\n' "$name" > "$out/SENTINEL"
    sum_before=$(cksum < "$out/SENTINEL")

    # (in a subshell whose stderr is dropped: bash's own "Aborted" notice for a
    # crashed weft would otherwise interleave with the report; the exit code says it)
    # the wall-clock kill is only a safety net; the limit that counts is CPU time
    rc=$( (TIMEFORMAT='%3U %3S'
           { time timeout -k 2 120 "$weft" compile "$plan" -o "$out" \
               > "$scratch/$name.stdout" 2> "$scratch/$name.stderr"; } 2> "$scratch/$name.time"
           echo $?) 2> /dev/null)
    elapsed=$(awk '{ printf "%d", ($1 + $2) * 1000 }' "$scratch/$name.time" 2>/dev/null || echo 0)

    problems=()
    if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
        problems+=("did not finish within 120 s (killed)")
    elif [ "$rc" -ne 1 ]; then
        problems+=("exit code $rc, expected 1")
    fi
    if [ "$elapsed" -gt "$LIMIT_MS" ]; then
        problems+=("took ${elapsed} ms of CPU time, more than ${LIMIT_MS} ms")
    fi
    if [ -s "$scratch/$name.stdout" ]; then
        problems+=("stdout is not empty: $(first_line "$scratch/$name.stdout")")
    fi
    if ! grep -qF -- "$expect" "$scratch/$name.stderr"; then
        problems+=("expected message not in stderr (got: $(first_line "$scratch/$name.stderr"))")
    elif ! grep -F -- "$expect" "$scratch/$name.stderr" | grep -q '^weft: error: '; then
        problems+=("the message does not start with 'weft: error: '")
    fi
    # messages quote the plan (names, values): they are cut, never megabytes
    if [ "$(wc -c < "$scratch/$name.stderr")" -gt "$STDERR_MAX" ]; then
        problems+=("stderr holds $(wc -c < "$scratch/$name.stderr") bytes, more than $STDERR_MAX")
    fi
    if [[ $(< "$scratch/$name.stderr") != *"$plan:"[0-9]* ]]; then
        problems+=("stderr does not name $plan:<line>")
    fi
    entries=$(ls -A "$out" 2> /dev/null | tr '\n' ' ')
    if [ ! -d "$out" ]; then
        problems+=("the output folder is gone")
    elif [ "$entries" != "SENTINEL " ]; then
        problems+=("the output folder changed: it holds: ${entries:-nothing}")
    elif [ "$(cksum < "$out/SENTINEL")" != "$sum_before" ]; then
        problems+=("the sentinel file in the output folder changed")
    fi
    leftovers=$(cd "$work" && ls -d out.tmp-* out.old-* 2> /dev/null | tr '\n' ' ')
    if [ -n "$leftovers" ]; then
        problems+=("left behind: $leftovers")
    fi

    if [ ${#problems[@]} -eq 0 ]; then
        pass "$name"
    else
        reason=${problems[0]}
        for p in "${problems[@]:1}"; do reason="$reason; $p"; done
        fail "$name" "$reason"
    fi
done

# ---- positive controls -----------------------------------------------------

# The default plan compiles into a fresh folder, leaving nothing else behind.
out=$scratch/control/tiny
mkdir -p "$scratch/control"
"$weft" compile plans/tiny.lua -o "$out" > "$scratch/control.stdout" 2> "$scratch/control.stderr"
rc=$?
leftovers=$(cd "$scratch/control" && ls -d tiny.tmp-* tiny.old-* 2> /dev/null | tr '\n' ' ')
if [ "$rc" -ne 0 ]; then
    fail "control: compile plans/tiny.lua" "exit code $rc, expected 0 ($(first_line "$scratch/control.stderr"))"
elif [ ! -f "$out/stage0.c" ] || [ ! -f "$out/launch.sh" ] || [ ! -f "$out/CMakeLists.txt" ]; then
    fail "control: compile plans/tiny.lua" "exit code 0 but $out lacks stage0.c, launch.sh or CMakeLists.txt"
elif [ -n "$leftovers" ]; then
    fail "control: compile plans/tiny.lua" "left behind: $leftovers"
else
    pass "control: compile plans/tiny.lua"
fi

# Exit codes of the command line: 0 ok, 2 usage error.
expect_rc() {
    local want=$1 label=$2
    shift 2
    "$@" > /dev/null 2>&1
    local rc=$?
    if [ "$rc" -eq "$want" ]; then pass "$label"; else fail "$label" "exit code $rc, expected $want"; fi
}
expect_rc 0 "control: weft --help exits 0" "$weft" --help
expect_rc 2 "control: weft bogus exits 2" "$weft" bogus
expect_rc 2 "control: weft check without a plan exits 2" "$weft" check
expect_rc 2 "control: weft compile without -o exits 2" "$weft" compile plans/tiny.lua

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
