#!/usr/bin/env bash
# bench/gpu_gpt2.sh: the CUDA benchmark of issue 6.  GPT-2 124M (12 layers,
# hidden 768, 12 heads, seq 1024, vocab 50304), micro-batch 16, bf16, one GPU
# (plans/gpt2_124m.lua): tokens/s and MFU (median over the steps after the
# first 3), then a second, shorter run under libweft_kprof.so for the GPU time
# by kernel class and the GPU's idle share.  Needs a GPU; run after the CUDA
# build (tests/gpu/check.sh calls it last).  Results go to $OUT (or a temp dir).
#
#   bash bench/gpu_gpt2.sh [extra weft --set/--backend options]
# e.g. STEPS=40 bash bench/gpu_gpt2.sh --set batch.micro=8
# BACKEND=cpu runs the same script on the CPU backend (with a smaller model set by
# --set, to try the script itself where there is no GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
# the build and run dependencies: the machine's own, else the carried .debs
# (a no-op under tests/gpu/check.sh, which has set them up)
set +euo pipefail
source tests/gpu/deps_env.sh >/dev/null || echo "gpu_gpt2.sh: dependencies missing (bash tests/gpu/bundle.sh, carry .gpu-deps)" >&2
set -euo pipefail
BUILD=${WEFT_GPU_BUILD:-build-gpu}
[ "${BACKEND:-cuda}" = cuda ] || BUILD=${WEFT_BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac  # relative to the repository, or absolute
unset WEFT_BUILD  # launch.sh reads WEFT_BUILD as the generated program's own build folder
WEFT=$BUILD/compiler/weft
STEPS=${STEPS:-30}
OUT=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/weft-bench.XXXXXX")}
mkdir -p "$OUT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/weft-gpt2.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

"$WEFT" data synth -o "$WORK/tokens.bin" --vocab 50304 --tokens $((16 * 1024 * (STEPS + 2))) >/dev/null
"$WEFT" compile plans/gpt2_124m.lua -o "$WORK/gpt2" --backend "${BACKEND:-cuda}" --set data.train="$WORK/tokens.bin" "$@" \
  >"$OUT/gpt2_compile.log" 2>&1
cmake -S "$WORK/gpt2" -B "$WORK/gpt2/build" -DCMAKE_BUILD_TYPE=Release >"$OUT/gpt2_build.log" 2>&1
cmake --build "$WORK/gpt2/build" -j"$(nproc)" >>"$OUT/gpt2_build.log" 2>&1

"$WORK/gpt2/launch.sh" --steps "$STEPS" --metrics "$OUT/gpt2_metrics.jsonl" >"$OUT/gpt2_run.log" 2>&1
# median of a metrics field over steps 3.. (the first steps warm up: allocation, cuBLAS
# heuristics, graph capture)
median() {
  sed -n "s/.*\"$1\": \([^,}]*\).*/\1/p" "$OUT/gpt2_metrics.jsonl" | tail -n +4 | sort -g |
    awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'
}
tps=$(median tokens_per_s)
mfu=$(median mfu)
kprof=$BUILD/runtime/cuda/libweft_kprof.so
if [ -f "$kprof" ]; then
  CUDA_INJECTION64_PATH=$kprof WEFT_KPROF="$OUT/gpt2_kernels.txt" \
    "$WORK/gpt2/launch.sh" --steps 6 --quiet >"$OUT/gpt2_profile.log" 2>&1 || true
fi
{
  echo "== plans/gpt2_124m.lua (GPT-2 124M, bf16, micro-batch 16 x 1024 tokens, one GPU) $* ($STEPS steps) =="
  grep -E "^(device|blas|cuda graph|precision|memory|done|throughput)" "$OUT/gpt2_run.log" || true
  printf 'tokens/s  %.0f (median, steps 4..%d); target 500000\n' "$tps" "$STEPS"
  # (no apostrophes inside these single quotes: one ended the format string,
  # printf failed on the words after it, and set -e -o pipefail failed the run)
  printf 'MFU       %.1f%% of the peak of the device at the precision of the plan (cluster file)\n' \
    "$(awk -v m="$mfu" 'BEGIN { print 100 * m }')"
  tail -n 1 "$OUT/gpt2_metrics.jsonl" | grep -o '"mem_bytes.*' || true
  # an if, not `[ -f ] && cat`: a missing profile must not be the group's status
  if [ -f "$OUT/gpt2_kernels.txt" ]; then cat "$OUT/gpt2_kernels.txt"; fi
} | tee "$OUT/gpt2_bench.txt"
