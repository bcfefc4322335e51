#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS [BUILD_DIR]
#
# Builds the libFuzzer harnesses (tests/fuzz/CMakeLists.txt, with clang) into
# BUILD_DIR (default build/fuzz) and runs each for SECONDS from its seed
# corpus: plans (plans/, tests/plans/, tests/unit/plans/, and tests/fuzz/regress_plan/:
# inputs that once ended a harness), DeepSpeed configs
# (tests/import/), and safetensors files made by safetensors_seeds.py.  New
# inputs the fuzzer finds go to a temporary folder, never into the tree.
#
# Exits 77 (ctest: skipped) where clang cannot link -fsanitize=fuzzer; 1 if a
# harness crashed, leaked, tripped a sanitizer or ran an input past -timeout,
# with the input kept in BUILD_DIR/artifacts/ and its report printed.
set -u
cd "$(dirname "$0")/../.." || exit 2
if [ $# -lt 1 ]; then
    echo "usage: tests/fuzz/run.sh SECONDS [BUILD_DIR]" >&2
    exit 2
fi
seconds=$1
build=${2:-build/fuzz}

probe=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz-probe.XXXXXX") || exit 2
printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }\n' \
    > "$probe/probe.c"
if ! command -v clang > /dev/null ||
   ! clang -fsanitize=fuzzer,address "$probe/probe.c" -o "$probe/probe" > /dev/null 2>&1; then
    rm -rf "$probe"
    echo "skipped: clang with libFuzzer's runtime (-fsanitize=fuzzer) is not available"
    exit 77
fi
rm -rf "$probe"

cmake -S tests/fuzz -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE= > /dev/null || exit 1
cmake --build "$build" -j"$(nproc)" > "$build/build.log" 2>&1 || { tail -30 "$build/build.log"; exit 1; }

scratch=$(mktemp -d "${TMPDIR:-/tmp}/weft-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$build/artifacts" "$scratch/tmp"
python3 tests/fuzz/safetensors_seeds.py "$scratch/seeds_safetensors" || exit 1

failed=0
# run NAME DICT SEED_DIR...: the harness's own temporary files go to
# $scratch/tmp (TMPDIR), its new inputs to $scratch/NAME
run() {
    local name=$1 dict=$2
    shift 2
    mkdir -p "$scratch/$name"
    local dict_opt=()
    [ -n "$dict" ] && dict_opt=(-dict="$dict")
    # -timeout is wall-clock time: the largest seed (plans/paper/korthikanti_1t.lua)
    # takes 5 s of CPU time under ASan, and 19 s on a loaded machine
    TMPDIR=$scratch/tmp "$build/fuzz_$name" -max_total_time="$seconds" -timeout=30 \
        -rss_limit_mb=3072 -close_fd_mask=3 -print_final_stats=1 "${dict_opt[@]}" \
        -artifact_prefix="$build/artifacts/$name-" "$scratch/$name" "$@" > "$scratch/$name.log" 2>&1
    local rc=$?
    local runs
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$scratch/$name.log")
    if [ "$rc" -eq 0 ]; then
        printf 'ok   fuzz_%s: %s inputs in %s s, corpus %s files\n' "$name" "${runs:-?}" "$seconds" \
            "$(ls "$scratch/$name" | wc -l)"
    else
        printf 'FAIL fuzz_%s: exit %d; input kept as %s\n' "$name" "$rc" \
            "$(ls -t "$build/artifacts/$name-"* 2> /dev/null | head -1)"
        grep -A25 -m1 -E '^==[0-9]+==ERROR|runtime error|ERROR: libFuzzer' "$scratch/$name.log" ||
            tail -20 "$scratch/$name.log"  # no report: the log's end says why it stopped
        failed=1
    fi
}

run plan tests/fuzz/plan.dict plans tests/plans tests/unit/plans tests/fuzz/regress_plan
run import_ds tests/fuzz/ds.dict tests/import
run safetensors "" "$scratch/seeds_safetensors"
exit $failed
