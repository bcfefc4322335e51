#!/usr/bin/env bash
# User kernels on the CUDA backend, without a GPU: the GELU and SwiGLU-gate
# kernels of tests/e2e/user_kernels/ compiled with --backend cuda (their
# functions __host__ __device__, launched through a __global__ wrapper per
# kernel) and built on the CPU emulator (tests/cuda_emu/program, as
# cuda_emu_run.sh builds whole programs), each trained on one rank and
# compared with the CPU backend's run of the same model with the built-in op.
#
# Tolerances: cuda_emu_run.sh's (tests/gpu/check.sh's) CPU-vs-CUDA ones,
# losses within 1e-4 relative and gradient norms within 1e-3: the two
# backends' other kernels sum in their own orders.  (Measured: 4e-8 and 3e-6.)
# A kernel whose backward wrapper dropped the accumulation (= for +=) or
# swapped the gate's two gradients moves them by far more.  Then the LLaMA
# whose RMSNorms are the rowwise kernel (user_kernels/kernels/rmsnorm.c: a
# thread per row forward, one thread over the rows backward), against the
# same CPU run, under the same tolerances.
# WEFT_TIMEOUT_SCALE (set by a sanitized build, bench/sanitize.sh) multiplies each run's `timeout`.
source "$(dirname "$0")/lib.sh"
RT=${WEFT_CUDA_EMU_RUNTIME:?set WEFT_CUDA_EMU_RUNTIME to the folder of weft-runtime-emu.cmake}
PROG=${WEFT_CUDA_EMU_PROGRAM:?set WEFT_CUDA_EMU_PROGRAM to tests/cuda_emu/program}
export OMP_NUM_THREADS=1 WF_EMU_ASYNC=1 WF_EMU_DEVICES=1
DATA=$(make_data)
D=tests/e2e/user_kernels
small=(--set data.train="$DATA" --set train.steps=4 --set mesh.tp=1 --set mesh.pp=1 --set batch.global=8)
# emu_vs_cpu DIR CPU_METRICS LABEL: builds the compiled CUDA program DIR on the
# emulator, trains it, and compares its losses and norms with the CPU run's
emu_vs_cpu() {
  local dir=$1 ref=$2 label=$3 field f tol r ok
  configure "$PROG" "$dir/build" -DWEFT_PROGRAM="$dir" -DWEFT_RUNTIME="$RT" >"$dir.cmake.log" 2>&1 \
    && cmake --build "$dir/build" >"$dir.build.log" 2>&1 || { cat "$dir.cmake.log" "$dir.build.log"; exit 1; }
  timeout $((300 * ${WEFT_TIMEOUT_SCALE:-1})) "$dir/launch.sh" --quiet --metrics "$dir.jsonl" >/dev/null
  for field in "loss 1e-4" "grad_norm 1e-3"; do
    read -r f tol <<<"$field"
    if r=$(same_field "$f" "$ref" "$dir.jsonl" "$tol"); then ok=true; else ok=false; fi
    check "$label: $r (<= $tol)" $ok
  done
}
for model in gpt2 llama; do
  build_plan "${model}_cpu" "$D/${model}_builtin.lua" "${small[@]}"
  run_plan "${model}_cpu" --metrics "$WORK/${model}_cpu.jsonl" >/dev/null
  "$WEFT" compile "$D/${model}_kernel.lua" -o "$WORK/${model}_cuda" --backend cuda "${small[@]}" 2>/dev/null
  check "$model: the CUDA program carries the kernel as __host__ __device__" \
    grep -q '#define WF_KERNEL_FN __host__ __device__' "$WORK/${model}_cuda/stage0.cu"
  emu_vs_cpu "$WORK/${model}_cuda" "$WORK/${model}_cpu.jsonl" "$model: kernel on the CUDA emulator vs built-in op on the CPU"
done
# the rowwise kernel as every RMSNorm, against the CPU's built-in RMSNorm (llama_cpu above)
"$WEFT" compile "$D/llama_norm.lua" -o "$WORK/norm_cuda" --backend cuda "${small[@]}" 2>/dev/null
emu_vs_cpu "$WORK/norm_cuda" "$WORK/llama_cpu.jsonl" \
  "llama, rowwise RMSNorm kernel on the CUDA emulator vs built-in RMSNorm on the CPU"
# with nvcc where there is one: the real CUDA build of a kernel program
if command -v nvcc >/dev/null 2>&1; then
  cmake -S "$WORK/llama_cuda" -B "$WORK/llama_nvcc" >"$WORK/nvcc.log" 2>&1 \
    && cmake --build "$WORK/llama_nvcc" >>"$WORK/nvcc.log" 2>&1 && ok=true || { ok=false; tail -n 20 "$WORK/nvcc.log"; }
  check "nvcc builds the llama kernel program" $ok
fi
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
