#!/usr/bin/env bash
# tests/gpu/check.sh without a GPU (WEFT_GPU_CHECK_EMULATED=1): its CPU-vs-CUDA
# training rows, graph and comm checks and summary table run on the CUDA
# emulator with a shrunk tiny plan, so a row that would break on the device
# (a log line or metrics field it parses that changed) fails here first.
# Three layouts: one rank (fp32 rows, the memory row, graph vs --no-graph),
# dp 2 (two ranks on one device, the NCCL refusal) and fp16 (16-bit rows, the
# graph captured again).  Needs the build's weft and the emulated runtime
# (WEFT_CUDA_EMU_RUNTIME, WEFT_CUDA_EMU_PROGRAM, as e2e_cuda_emu).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
: "${WEFT_GPU_BUILD:?set WEFT_GPU_BUILD to the build folder}"
results=$(mktemp -d "${TMPDIR:-/tmp}/weft-gpucheck.XXXXXX")
trap 'rm -rf "$results"' EXIT
WEFT_GPU_CHECK_EMULATED=1 LAYOUTS="one-rank dp2 fp16-one-rank" OUT=$results \
  bash tests/gpu/check.sh >"$results/check.out" 2>&1
rc=$?
table=$results/summary.txt
cat "$table" 2>/dev/null || tail -n 30 "$results/check.out"
fail=0
expect() {  # expect PATTERN: a row of the table matching it ends in ok
  if grep -E "$1" "$table" 2>/dev/null | grep -q ' ok$'; then echo "ok   row: $1"
  else echo "FAIL row missing or failed: $1"; fail=1; fi
}
expect '^tiny one-rank: loss vs CPU'
expect "^tiny one-rank: weft's allocations vs plan"
expect '^tiny one-rank: graph vs --no-graph loss'
expect '^tiny dp2: final weights vs CPU'
expect '^comm = nccl, two ranks on one GPU: refused'
expect '^tiny fp16-one-rank: graph captured again'
[ "$rc" = 0 ] || { echo "FAIL check.sh exited $rc"; tail -n 20 "$results/check.out"; fail=1; }
[ $fail = 0 ] && echo "ok   tests/gpu/check.sh runs clean on the CUDA emulator"
exit $fail
