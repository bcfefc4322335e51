#!/usr/bin/env bash
# tests/gpu/check.sh: the one script a machine with an NVIDIA GPU runs
# (`bash tests/gpu/check.sh`; the summary and logs go to $OUT when it is set).
#
# On the bare GPU machine (no network, no weft dependencies installed), from a
# Debian 12 machine with apt:
#   bash tests/gpu/bundle.sh        # the .debs it may lack, into .gpu-deps/
#   run(command="OUT=$OUT bash tests/gpu/check.sh", carry=[".gpu-deps"], timeout_s=540)
# tests/gpu/deps_env.sh takes each dependency from the machine when it has it,
# else from the carried .debs (unpacked under /tmp/weft-deps); $OUT/deps.txt
# says which.  $OUT gets at most 8 files: summary.txt, deps.txt, kernels.txt,
# gpt2_bench.txt, build_tail.txt (a failed build), cluster_cuda.lua (step 6) and
# logs.tar.gz (every log, refreshed every 20 s, so a run cut short still brings
# its logs back).
#
#  0. dependencies (tests/gpu/deps_env.sh);
#  1. configures and builds everything with CUDA (folder $WEFT_GPU_BUILD,
#     default build-gpu); fails if the CUDA runtime was not built;
#  2. without a GPU (no working nvidia-smi) it stops there: the build is the check;
#  3. kernels: tests/gpu/check_kernels.c, built against each backend, runs every
#     rt.h kernel and the optimizer hooks on the same random inputs; per output
#     the max |cuda - cpu| / max |cpu| must stay under 1e-5 (fp32 with different
#     summation orders), 1e-2 for AdamW's 16-bit working weights and the bf16 /
#     fp16 attention (tensor cores, P and dS rounded), and 0 (bit for
#     bit) for bf16 / fp16 rounding and the overflow flag;
#  4. training: plans/tiny.lua for 10 steps, CPU backend vs CUDA backend, under
#     six layouts (one rank; dp 2, tp 2, tp 2 with sequence parallelism, pp 2 and
#     pp 2 zero-bubble with two ranks sharing the GPU; LAYOUTS="one-rank dp2"
#     picks some); each step's loss must agree within 1e-4 relative and the gradient
#     norm within 1e-3, the final weights within 1e-3 relative / 1e-5 absolute
#     (`weft ckpt diff`): the products of cuBLAS and OpenBLAS differ in rounding,
#     and ten AdamW steps carry that along; plans/llama_tiny.lua (RMSNorm, RoPE,
#     grouped-query attention, SwiGLU: runtime/cuda/llama.cu and attention.cu's
#     flash kernels) on one rank with the same tolerances (LAYOUTS name
#     llama-one-rank); then the same plan in bf16 (one rank, dp 2, tp 2) and
#     fp16 (one rank, its loss scale changing; LAYOUTS names bf16-one-rank,
#     bf16-dp2, bf16-tp2, fp16-one-rank): losses within 1e-2 relative
#     (the tensor-core attention's bf16 P and dS included, see below);
#  5. CUDA graphs: the one-rank run (a captured step replayed from step 2)
#     against --no-graph: identical losses and norms; comm = "nccl" with two
#     ranks on the one GPU stops with a clear message;
#  6. `weft calibrate --backend cuda` on the one GPU (GEMM shapes, attention;
#     NCCL needs two GPUs): cluster_cuda.lua for `weft simulate --calibration`;
#  7. the benchmark, bench/gpu_gpt2.sh (GPT-2 124M, bf16, one GPU): tokens/s,
#     MFU and GPU time by kernel class;
#  8. prints a final table (also $OUT/summary.txt); exit 0 only if all pass.
#
# WEFT_GPU_CHECK_EMULATED=1 runs the script's own logic without a GPU, so that
# CI catches a row that would break on the device (tests/e2e/gpu_check_emu.sh):
# the build in $WEFT_GPU_BUILD is used as it is, the CUDA programs are built
# against the CUDA emulator (WEFT_CUDA_EMU_RUNTIME, WEFT_CUDA_EMU_PROGRAM, as
# e2e_cuda_emu), the tiny plan is shrunk, and the kernels (ctest
# cuda_emu_kernels) and the benchmark (bench_script.sh) are left to their own
# tests.
# WEFT_TIMEOUT_SCALE (set by a sanitized build, bench/sanitize.sh) multiplies each run's `timeout`.
cd "$(dirname "$0")/../.." || exit 2
set -o pipefail
# the steps below write their logs into a scratch folder ($OUT from here on);
# pack copies what matters into the results folder ($RESULTS, the caller's $OUT)
RESULTS=${OUT:-$(mktemp -d "${TMPDIR:-/tmp}/weft-gpu.XXXXXX")}
mkdir -p "$RESULTS"
OUT=$(mktemp -d "${TMPDIR:-/tmp}/weft-gpu-logs.XXXXXX")
BUILD=${WEFT_GPU_BUILD:-build-gpu}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac  # relative to the repository, or absolute
EMULATED=${WEFT_GPU_CHECK_EMULATED:-}
TABLE=$OUT/summary.txt
: >"$TABLE"
row() { printf '%-44s %-40s %s\n' "$1" "$2" "$3" | tee -a "$TABLE"; }
pack() {  # pack [snapshot]: a snapshot's summary says the script was still running
  local f
  for f in summary.txt deps.txt kernels.txt gpt2_bench.txt build_tail.txt cluster_cuda.lua; do
    [ -f "$OUT/$f" ] && cp "$OUT/$f" "$RESULTS/.$f" && mv -f "$RESULTS/.$f" "$RESULTS/$f"
  done
  [ -z "${1:-}" ] || echo "(snapshot at ${SECONDS} s: check.sh was still running)" >>"$RESULTS/summary.txt"
  # logs change while tar reads them (its exit 1): still a good snapshot
  tar -czf "$RESULTS/.logs.tar.gz" -C "$OUT" --exclude='*.bin' . 2>/dev/null
  [ $? -le 1 ] && mv -f "$RESULTS/.logs.tar.gz" "$RESULTS/logs.tar.gz"
  return 0
}
# (tests/e2e/lib.sh replaces the EXIT trap: the loop also ends with this script)
(while sleep 20; do kill -0 $$ 2>/dev/null || exit 0; pack snapshot; done) &
packer=$!
trap 'kill $packer 2>/dev/null' EXIT
finish() {
  echo
  echo "== summary ($(grep -c ' ok$' "$TABLE") ok, $(grep -c ' FAIL$' "$TABLE") failed, ${SECONDS} s) =="
  cat "$TABLE"
  kill $packer 2>/dev/null
  wait $packer 2>/dev/null
  pack
  echo "results in $RESULTS: $(cd "$RESULTS" && ls | tr '\n' ' ')"
  ! grep -q ' FAIL$' "$TABLE"
  exit $?
}

echo "== dependencies =="
if DEPS_LOG=$OUT/deps.txt source tests/gpu/deps_env.sh; then
  row "dependencies" "$(grep -c -E 'carried|wheel' "$OUT/deps.txt") carried or from wheels (deps.txt)" ok
else
  row "dependencies" "$(grep MISSING "$OUT/deps.txt" | cut -d: -f1 | tr '\n' ' ')missing (deps.txt)" FAIL
fi

echo "== build ($BUILD) =="
# shellcheck disable=SC2086 # WEFT_CMAKE_ARGS: words from deps_env.sh (CUPTI from a wheel)
if [ -n "$EMULATED" ]; then
  row "build" "emulated: $BUILD as it is" ok
elif cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release $WEFT_CMAKE_ARGS >"$OUT/configure.log" 2>&1 &&
   cmake --build "$BUILD" -j"$(nproc)" >"$OUT/build.log" 2>&1; then
  row "build" "$(grep -o 'CUDA backend o[nf]*' "$OUT/configure.log") (${SECONDS} s)" ok
else
  tail -n 60 "$OUT/configure.log" "$OUT/build.log" 2>/dev/null | tee "$OUT/build_tail.txt"
  row "build" "failed (see build_tail.txt)" FAIL
  finish
fi
if [ ! -f "$BUILD/runtime/weft-runtime-cuda.cmake" ]; then
  row "CUDA runtime built" "no: nvcc or NCCL not found" FAIL
  finish
fi
if [ -n "$EMULATED" ]; then
  echo "GPU 0: the CUDA emulator (tests/cuda_emu)" >"$OUT/gpu.txt"
elif ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >"$OUT/gpu.txt" 2>&1; then
  row "GPU checks" "skipped: no GPU (nvidia-smi)" ok
  finish
fi
echo "GPU: $(head -1 "$OUT/gpu.txt")"

# ---- kernels ------------------------------------------------------------------
echo "== kernels: CUDA vs CPU =="
if [ -n "$EMULATED" ]; then
  row "kernels" "emulated: ctest cuda_emu_kernels checks them" ok
elif "$BUILD/tests/check_kernels_cpu" run "$OUT/kernels_cpu.bin" &&
   timeout $((300 * ${WEFT_TIMEOUT_SCALE:-1})) "$BUILD/tests/check_kernels_cuda" run "$OUT/kernels_cuda.bin" >"$OUT/kernels_cuda.log" 2>&1; then
  "$BUILD/tests/check_kernels_cpu" compare "$OUT/kernels_cpu.bin" "$OUT/kernels_cuda.bin" >"$OUT/kernels.txt"
  status=$?
  cat "$OUT/kernels.txt"
  worst=$(awk '$NF == "ok" || $NF == "FAIL" { if ($(NF-2) + 0 > w) w = $(NF-2) + 0 } END { printf "%.2e", w }' "$OUT/kernels.txt")
  row "kernels ($(grep -c -E ' (ok|FAIL)$' "$OUT/kernels.txt") outputs, < 1e-5 / 1e-2 / exact)" \
      "worst $worst, $(grep -c ' FAIL$' "$OUT/kernels.txt") over" "$([ $status = 0 ] && echo ok || echo FAIL)"
else
  cat "$OUT/kernels_cuda.log"
  row "kernels" "check_kernels_cuda failed (see kernels_cuda.log)" FAIL
fi

# ---- training: CPU backend vs CUDA backend -------------------------------------
echo "== training: plans/tiny.lua, 10 steps, CPU vs CUDA =="
export WEFT=$BUILD/compiler/weft WEFT_RUNTIME=$BUILD/runtime
source tests/e2e/lib.sh
set +e
data=$(make_data)
# build_for NAME PLAN BACKEND [--set ...]: build_plan, or under
# WEFT_GPU_CHECK_EMULATED a shrunk plan, its CUDA program against the emulator
shrink=()
if [ -n "$EMULATED" ]; then
  shrink=(--set model.hidden=64 --set model.seq=32 --set model.layers=2 --set batch.micro=2 --set batch.global=4)
  export OMP_NUM_THREADS=1 WF_EMU_ASYNC=1 WF_EMU_DEVICES=1  # one device, as on the GPU machine
fi
build_for() {
  local name=$1 plan=$2 backend=$3
  shift 3
  if [ -z "$EMULATED" ] || [ "$backend" != cuda ]; then
    build_plan "$name" "$plan" --backend "$backend" "${shrink[@]}" "$@"
    return
  fi
  "$WEFT" compile "$plan" -o "$WORK/$name" --backend cuda "${shrink[@]}" "$@" &&
    cmake -S "${WEFT_CUDA_EMU_PROGRAM:?}" -B "$WORK/$name/build" -DWEFT_PROGRAM="$WORK/$name" \
      -DWEFT_RUNTIME="${WEFT_CUDA_EMU_RUNTIME:?}" >"$WORK/$name.cmake.log" 2>&1 &&
    cmake --build "$WORK/$name/build" >"$WORK/$name.build.log" 2>&1
}
# train_both NAME --set ...: builds and runs plans/tiny.lua (or $TRAIN_PLAN) for
# 10 steps on each backend (metrics in $OUT/NAME-BACKEND.jsonl, final checkpoint
# in $WORK/NAME-BACKEND.ckpt); 0 if both ran, else a FAIL row and 1.
train_both() {
  local name=$1 backend ok=0 plan=${TRAIN_PLAN:-plans/tiny.lua}
  shift
  for backend in cpu cuda; do
    if ! build_for "$name-$backend" "$plan" $backend "$@" >"$OUT/$name-$backend.build.log" 2>&1 ||
       ! timeout $((300 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$name-$backend/launch.sh" --steps 10 --data "$data" \
           --metrics "$OUT/$name-$backend.jsonl" --save "$WORK/$name-$backend.ckpt" \
           >"$OUT/$name-$backend.log" 2>&1; then
      tail -n 5 "$OUT/$name-$backend.build.log" "$OUT/$name-$backend.log"
      row "$(basename "$plan" .lua) $name ($backend)" "did not build or run (see $name-$backend.log)" FAIL
      ok=1
    fi
  done
  return $ok
}
# metric NAME LINE: a number field of a --metrics line, or nothing
metric() { sed -n "s/.*\"$1\": \([-0-9.e+]*\)[,}].*/\1/p" <<<"$2"; }
# two ranks share the one GPU: NCCL refuses that, so those layouts run on the
# host-staged MPI fallback (comm = "mpi"; the CPU backend ignores it)
# fp32_rows LABEL NAME: the rows of an fp32 CPU-vs-CUDA run NAME: each step's
# loss within 1e-4 relative, the gradient norm within 1e-3, the final weights
# within 1e-3 relative / 1e-5 absolute
fp32_rows() {
  local label=$1 name=$2 loss norm weights lrc nrc wrc
  loss=$(same_field loss "$OUT/$name-cpu.jsonl" "$OUT/$name-cuda.jsonl" 1e-4); lrc=$?
  norm=$(same_field grad_norm "$OUT/$name-cpu.jsonl" "$OUT/$name-cuda.jsonl" 1e-3); nrc=$?
  row "$label: loss vs CPU (< 1e-4)" "$loss" "$([ $lrc = 0 ] && echo ok || echo FAIL)"
  row "$label: grad norm vs CPU (< 1e-3)" "$norm" "$([ $nrc = 0 ] && echo ok || echo FAIL)"
  weights=$("$WEFT" ckpt diff "$WORK/$name-cpu.ckpt/model.safetensors" \
            "$WORK/$name-cuda.ckpt/model.safetensors" --tol 1e-3 --atol 1e-5 | tail -n 1); wrc=$?
  row "$label: final weights vs CPU (< 1e-3)" "$weights" "$([ $wrc = 0 ] && echo ok || echo FAIL)"
}

for layout in "one-rank:--set mesh.dp=1" "dp2:--set mesh.dp=2 --set comm=mpi" \
              "tp2:--set mesh.dp=1 --set mesh.tp=2 --set comm=mpi" "pp2:--set mesh.dp=1 --set mesh.pp=2 --set comm=mpi" \
              "tp2-sp:--set mesh.dp=1 --set mesh.tp=2 --set mesh.sp=true --set comm=mpi" \
              "pp2-zb:--set mesh.dp=1 --set mesh.pp=2 --set pipeline.schedule=zb-h1 --set comm=mpi"; do
  name=${layout%%:*}
  # LAYOUTS="one-rank dp2" runs only those (a short device session)
  case " ${LAYOUTS:-$name} " in *" $name "*) ;; *) continue ;; esac
  read -r -a sets <<<"${layout#*:}"
  train_both "$name" "${sets[@]}" || continue
  fp32_rows "tiny $name" "$name"
  # metrics.c on a device: weft's own allocations after the warm-up step
  # (device + pinned host, device.c counts each) at most the plan and within
  # 1% of it (compiler/memory.c; 0.998..1 on the emulator); cudaMemGetInfo's
  # figure (the whole device, CUDA's and NCCL's own memory too) only reported;
  # MFU above 0 against the H200's fp32 peak
  last=$(tail -n 1 "$OUT/$name-cuda.jsonl")
  own=$(metric device_alloc_bytes "$last"); pinned=$(metric pinned_alloc_bytes "$last")
  planned=$(metric mem_planned_bytes "$last"); used=$(metric device_mem_used_bytes "$last")
  mfu=$(metric mfu "$last")
  row "tiny $name: weft's allocations vs plan, MFU $mfu" \
    "${own:-?} + ${pinned:-?} of ${planned:-?} B; device in use ${used:-?} B" \
    "$(awk -v o="$own" -v h="$pinned" -v p="$planned" -v u="$used" -v m="$mfu" 'BEGIN {
         t = o + h; exit !(o != "" && u != "" && p > 0 && t <= p && t >= 0.99 * p && m > 0) }' && echo ok || echo FAIL)"
done

# The LLaMA family on one rank, fp32: RMSNorm, RoPE and SwiGLU (llama.cu), the
# grouped-query attention on the flash kernels (4 query heads on 2 key/value
# heads), the untied head; the tolerances of tiny's one-rank rows.
echo "== training: plans/llama_tiny.lua, 10 steps, CPU vs CUDA =="
name=llama-one-rank
case " ${LAYOUTS:-$name} " in *" $name "*)
  if TRAIN_PLAN=plans/llama_tiny.lua train_both "$name" --set mesh.dp=1; then
    fp32_rows "llama_tiny one-rank" "$name"
  fi ;;
esac

# bf16: 16-bit rounding after every op, AdamW with fp32 masters, on the device;
# the CUDA program stores its activations in 16 bits (weft/rt.h, act16: its
# kernels round what they store, as the CPU's rounding calls do; e2e_cuda_emu
# matches the CPU within 1e-5 on the emulator); the two backends' GEMMs differ
# in the last fp32 bits, which bf16 rounding can widen to a bf16 unit: losses
# within 1e-2.
# CUDA's attention runs on tensor cores here (tiny's head size is 32) and rounds
# P and dS to bf16 before its products, which the CPU does not: the CPU backend
# made to round them too moved tiny's 10 bf16 losses by at most 3.3e-5 relative,
# so 1e-2 still holds that with a wide margin.
# bf16-tp2: the tensor-parallel collectives under 16-bit storage (sums widened
# to fp32, runtime/common/tp.c); fp16-one-rank: fp16 storage and a loss scale
# that doubles every 2 steps, so the CUDA graph is captured again (graph.c).
echo "== training: plans/tiny.lua in bf16 and fp16, 10 steps, CPU vs CUDA =="
for layout in "bf16-one-rank:--set mesh.dp=1 --set precision=bf16" \
              "bf16-dp2:--set mesh.dp=2 --set comm=mpi --set precision=bf16" \
              "bf16-tp2:--set mesh.dp=1 --set mesh.tp=2 --set comm=mpi --set precision=bf16" \
              "fp16-one-rank:--set mesh.dp=1 --set precision=fp16 --set loss_scale.window=2 --set loss_scale.hysteresis=1"; do
  name=${layout%%:*}
  case " ${LAYOUTS:-$name} " in *" $name "*) ;; *) continue ;; esac
  read -r -a sets <<<"${layout#*:}"
  train_both "$name" "${sets[@]}" || continue
  row "tiny $name: 16-bit activation storage" "$(grep -o '\.act16 = [01]' "$WORK/$name-cuda/stage0.cu")" \
    "$(grep -q '\.act16 = 1' "$WORK/$name-cuda/stage0.cu" && echo ok || echo FAIL)"
  loss=$(same_field loss "$OUT/$name-cpu.jsonl" "$OUT/$name-cuda.jsonl" 1e-2); lrc=$?
  row "tiny $name: loss vs CPU (< 1e-2)" "$loss" "$([ $lrc = 0 ] && echo ok || echo FAIL)"
  if [ "$name" = fp16-one-rank ]; then  # the scale doubled at least once in 10 steps
    again=$(grep -c 'cuda graph: captured again' "$OUT/$name-cuda.log")
    row "tiny $name: graph captured again for a new loss scale" "$again time(s)" \
      "$([ "$again" -gt 0 ] && echo ok || echo FAIL)"
  fi
done

# ---- CUDA graphs and communication -----------------------------------------------
# One rank replays a captured step from step 2 on; --no-graph runs every step
# eagerly.  Same kernels, same order, the loss summed on the device in the
# host's order: the losses and norms must be identical, not just close.
echo "== CUDA graph vs eager; comm checks =="
case " ${LAYOUTS:-one-rank} " in *" one-rank "*)
  if [ -f "$OUT/one-rank-cuda.jsonl" ] &&
     timeout $((300 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/one-rank-cuda/launch.sh" --steps 10 --data "$data" --no-graph \
       --metrics "$OUT/one-rank-eager.jsonl" >"$OUT/one-rank-eager.log" 2>&1; then
    on=$(grep -o 'cuda graph: on (captured step [0-9]*, [0-9]* nodes)' "$OUT/one-rank-cuda.log")
    row "tiny one-rank: graph log" "${on:-no 'cuda graph: on' line}" "$([ -n "$on" ] && echo ok || echo FAIL)"
    row "tiny one-rank: --no-graph log" "$(grep -o 'cuda graph: off: --no-graph' "$OUT/one-rank-eager.log")" \
      "$(grep -q 'cuda graph: off: --no-graph' "$OUT/one-rank-eager.log" && echo ok || echo FAIL)"
    loss=$(same_field loss "$OUT/one-rank-cuda.jsonl" "$OUT/one-rank-eager.jsonl" 0); lrc=$?
    norm=$(same_field grad_norm "$OUT/one-rank-cuda.jsonl" "$OUT/one-rank-eager.jsonl" 0); nrc=$?
    row "tiny one-rank: graph vs --no-graph loss (identical)" "$loss" "$([ $lrc = 0 ] && echo ok || echo FAIL)"
    row "tiny one-rank: graph vs --no-graph norm (identical)" "$norm" "$([ $nrc = 0 ] && echo ok || echo FAIL)"
  else
    tail -n 5 "$OUT/one-rank-eager.log" 2>/dev/null
    row "tiny one-rank: --no-graph run" "did not run (see one-rank-eager.log)" FAIL
  fi ;;
esac
case " ${LAYOUTS:-dp2} " in *" dp2 "*)
  row "tiny dp2 (comm = mpi): graph verdict logged" "$(grep -o 'cuda graph: off: comm = mpi' "$OUT/dp2-cuda.log" 2>/dev/null)" \
    "$(grep -q 'cuda graph: off: comm = mpi' "$OUT/dp2-cuda.log" 2>/dev/null && echo ok || echo FAIL)"
  # NCCL with two ranks of one communicator on one device: a clear refusal
  if build_for dp2-nccl plans/tiny.lua cuda --set mesh.dp=2 >"$OUT/dp2-nccl.build.log" 2>&1; then
    timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/dp2-nccl/launch.sh" --steps 1 --data "$data" >"$OUT/dp2-nccl.log" 2>&1
    row "comm = nccl, two ranks on one GPU: refused" "$(grep -o 'NCCL needs one device per rank' "$OUT/dp2-nccl.log" | head -1)" \
      "$(grep -q 'rank [01]: ncclCommInitRank failed.*NCCL needs one device per rank' "$OUT/dp2-nccl.log" && echo ok || echo FAIL)"
  else
    row "comm = nccl, two ranks on one GPU" "did not build (see dp2-nccl.build.log)" FAIL
  fi ;;
esac

# ---- the cost model's measurements (weft calibrate --backend cuda) ---------------
echo "== weft calibrate --backend cuda =="
if [ -n "$EMULATED" ]; then
  row "weft calibrate --backend cuda" "emulated: ctest e2e_calibrate_cuda runs it" ok
elif WEFT_RUNTIME=$BUILD/runtime timeout $((180 * ${WEFT_TIMEOUT_SCALE:-1})) "$BUILD/compiler/weft" calibrate --backend cuda --gpus 1 \
       -o "$OUT/cluster_cuda.lua" >"$OUT/calibrate.log" 2>&1; then
  cat "$OUT/calibrate.log"
  row "weft calibrate --backend cuda" \
      "GEMM max $(awk -F', ' '/^    \{ [0-9]/ { sub(/ },$/, "", $4); if ($4 > m) m = $4 } END { printf "%.0f", m }' \
        "$OUT/cluster_cuda.lua") TFLOP/s (cluster_cuda.lua)" ok
else
  tail -n 20 "$OUT/calibrate.log"
  row "weft calibrate --backend cuda" "failed (see calibrate.log)" FAIL
fi

# ---- benchmark: GPT-2 124M, bf16, one GPU (bench/gpu_gpt2.sh) --------------------
echo "== benchmark: GPT-2 124M, bf16, micro-batch 16 =="
if [ -n "$EMULATED" ]; then
  row "GPT-2 124M bf16 (target 500k tokens/s)" "emulated: not run (bench_script.sh tests the script)" ok
elif OUT=$OUT WEFT_GPU_BUILD=$BUILD STEPS=20 timeout $((240 * ${WEFT_TIMEOUT_SCALE:-1})) bash bench/gpu_gpt2.sh >"$OUT/bench.log" 2>&1; then
  cat "$OUT/gpt2_bench.txt"
  row "GPT-2 124M bf16 (target 500k tokens/s)" \
      "$(sed -n 's/^tokens\/s *\([0-9]*\).*/\1 tokens\/s/p' "$OUT/gpt2_bench.txt"), MFU $(sed -n 's/^MFU *\([0-9.]*%\).*/\1/p' "$OUT/gpt2_bench.txt")" ok
else
  tail -n 20 "$OUT/bench.log" "$OUT"/gpt2_*.log 2>/dev/null
  row "GPT-2 124M bf16 benchmark" "did not build or run (see bench.log)" FAIL
fi
finish
