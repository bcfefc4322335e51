#!/usr/bin/env bash
# bench_script.sh: bench/gpu_gpt2.sh, the GPU session's benchmark, run end to
# end on the CPU backend with a small model (BACKEND=cpu, as its header says),
# so that a shell mistake in it fails here instead of in the short GPU session
# (a quoting slip once made its summary's printf fail, and the whole script).
set -euo pipefail
: "${WEFT_BUILD:?set WEFT_BUILD to the build folder}"
out=$(mktemp -d "${TMPDIR:-/tmp}/weft-bench-test.XXXXXX")
trap 'rm -rf "$out"' EXIT
passed=0 failed=0
check() {
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}
rc=0
STEPS=5 BACKEND=cpu OUT=$out bash bench/gpu_gpt2.sh --set model.layers=1 --set model.hidden=64 \
  --set model.heads=2 --set model.seq=64 --set batch.micro=2 --set batch.global=2 \
  --set precision=fp32 >"$out/stdout.txt" 2>&1 || rc=$?
[ $rc = 0 ] || tail -20 "$out/stdout.txt" "$out"/gpt2_*.log 2>/dev/null || true
check "bench/gpu_gpt2.sh exits 0" test $rc = 0
# the lines tests/gpu/check.sh reads back from the summary
check "summary: tokens/s is a number" grep -Eq '^tokens/s +[0-9]+ \(median' "$out/gpt2_bench.txt"
check "summary: MFU is a percentage" grep -Eq '^MFU +[0-9.]+% of the peak' "$out/gpt2_bench.txt"
check "summary: arena bytes" grep -q '"mem_bytes": [0-9]' "$out/gpt2_bench.txt"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
