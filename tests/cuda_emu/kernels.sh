#!/usr/bin/env bash
# tests/cuda_emu/kernels.sh CHECK_CPU CHECK_EMU CUDA_DIR LISTED: every CUDA
# kernel, run by the CPU emulator, against the CPU backend on the same random
# inputs (tests/gpu/check_kernels.c, 1e-5 norm-relative), with blocks and
# their threads scheduled first to last and last to first.  Also: every .cu
# file of CUDA_DIR is in LISTED (emu.cmake's kernel list or its exclusions),
# and a broken warp shuffle in the emulator is caught by name.
set -euo pipefail
cpu=$1 emu=$2 cuda_dir=$3 listed=$4
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-emu.XXXXXX")
trap 'rm -rf "$work"' EXIT

missing=""
for f in "$cuda_dir"/*.cu; do
  name=$(basename "$f")
  [[ ";$listed;" == *";$name;"* ]] || missing="$missing $name"
done
if [ -n "$missing" ]; then
  echo "FAIL runtime/cuda has kernel files the emulated build does not compile:$missing"
  echo "     add each to WEFT_EMU_KERNELS (or WEFT_EMU_NOT_EMULATED, with the reason) in tests/cuda_emu/emu.cmake"
  exit 1
fi
echo "ok   every runtime/cuda .cu file is listed in tests/cuda_emu/emu.cmake"

"$cpu" run "$work/cpu.bin"
start=$(date +%s%N)
"$emu" run "$work/emu.bin"
ms=$(( ($(date +%s%N) - start) / 1000000 ))
if ! "$cpu" compare "$work/cpu.bin" "$work/emu.bin" >"$work/cmp.txt"; then
  cat "$work/cmp.txt"
  echo "FAIL emulated CUDA kernels differ from the CPU backend"
  exit 1
fi
grep -q " 0 over threshold" "$work/cmp.txt"
cat "$work/cmp.txt"
echo "ok   emulated CUDA kernels match the CPU backend (${ms} ms): $(tail -1 "$work/cmp.txt")"

# the other order: a barrier missing between a write and another thread's
# read, or a block reading another block's output, shows in one of the two
# orders (see test_emu.cc)
WF_EMU_ORDER=reverse "$emu" run "$work/rev.bin"
if ! "$cpu" compare "$work/cpu.bin" "$work/rev.bin" >"$work/rev.txt"; then
  grep FAIL "$work/rev.txt"
  echo "FAIL emulated CUDA kernels, threads run last to first, differ from the CPU backend"
  exit 1
fi
echo "ok   the same with blocks and threads run last to first: $(tail -1 "$work/rev.txt")"

# kernels that run when the host next waits, as on a GPU (a launch returns
# first): a result read on the host without waiting for the device is stale
WF_EMU_ASYNC=1 "$emu" run "$work/async.bin"
if ! "$cpu" compare "$work/cpu.bin" "$work/async.bin" >"$work/async.txt"; then
  grep FAIL "$work/async.txt" | head -20
  echo "FAIL with launches deferred to the next host wait (WF_EMU_ASYNC), results differ: a host read without a wait"
  exit 1
fi
echo "ok   the same with launches deferred to the next host wait: $(tail -1 "$work/async.txt")"

# must fail: __shfl_down_sync returning the caller's own value breaks every
# block reduction (wf_block_sum), so layernorm's statistics go wrong
WF_EMU_FAULT=shfl_down "$emu" run "$work/bad.bin"
if "$cpu" compare "$work/cpu.bin" "$work/bad.bin" >"$work/bad.txt"; then
  echo "FAIL a broken warp shuffle was not caught"; exit 1
fi
grep -q "^layernorm_fwd mean .*FAIL" "$work/bad.txt"
echo "ok   a broken warp shuffle is caught: $(grep -c FAIL "$work/bad.txt") outputs fail, first $(grep FAIL "$work/bad.txt" | head -1 | awk '{print $1, $2}')"
