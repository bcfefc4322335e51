#!/usr/bin/env bash
# --backend cuda on a machine with the CUDA toolkit (a GPU is not needed):
# the stage programs come out as .cu, byte-identical across compiles, and the
# generated projects configure, build and link against libweftrt_cuda.  Where
# the runtime was built without CUDA (no nvcc or NCCL) the test is skipped
# (exit 77).  On a machine without a GPU the built program must stop with the
# rank and the failing CUDA call named; tests/gpu/check.sh runs it on a GPU.
source "$(dirname "$0")/lib.sh"
RT=${WEFT_RUNTIME:?set WEFT_RUNTIME to the runtime build folder}
if [ ! -f "$RT/weft-runtime-cuda.cmake" ]; then
  echo "skipped: this build has no CUDA runtime (nvcc or NCCL not found when configuring)"
  exit 77
fi

# Every runtime function of libweftrt exists in libweftrt_cuda, but for the
# CPU-only ones named here.  A kernel added to runtime/cpu/ without a CUDA
# version shows up here by name: write it in runtime/cuda/, or list it and
# refuse its op for --backend cuda in compiler/backend_cuda.c.
# CPU-only: BLAS plumbing (the one-pool GEMM cut and pair, FLOPs counted by callers
# of cblas_sgemm) and the classifier's dlogits row; the chunked LM head's
# idle-chunk test (it reads the targets on the host: CUDA computes such a
# chunk's zero dlogits instead, runtime/cuda/xent.cu); the staging of 16-bit activations as floats (runtime/cpu/
# stage16.h: CUDA kernels read 16 bits themselves); binding more ranks than
# cores to the cores (runtime/cpu/bind.c: a GPU rank computes on its device).
# (The LLaMA family's kernels are runtime/cuda/llama.cu and attention.cu's
# wf_gqa_attention_*.)
CPU_ONLY="wf_blas_better_core wf_sgemm wf_sgemm_pair wf_sgemm_rate wf_sgemm_split wf_gemm_stats_add wf_dlogits_row
  wf_xent_rows_idle
  wf_stage16_begin wf_stage16_in wf_stage16_out wf_stage16_acc wf_stage16_end
  wf_bind_slot wf_bind_cpus wf_bind_ranks wf_bind_note"
symbols() { nm -g --defined-only "$1" 2>/dev/null | awk '$2 == "T" && $3 ~ /^wf_/ { print $3 }' | sort -u; }
missing=$(comm -23 <(symbols "$RT/libweftrt.a") <(symbols "$RT/cuda/libweftrt_cuda.a") |
          grep -vxF -f <(tr ' ' '\n' <<<"$CPU_ONLY") || true)
check "libweftrt_cuda has every runtime function${missing:+ (missing: $(echo $missing))}" \
  test -z "$missing" -a -n "$(symbols "$RT/cuda/libweftrt_cuda.a")"

for plan in tiny gpt2_3d llama_tiny; do
  "$WEFT" compile plans/$plan.lua -o "$WORK/$plan" --backend cuda 2>/dev/null
  "$WEFT" compile plans/$plan.lua -o "$WORK/$plan-again" --backend cuda 2>/dev/null
  check "$plan: two CUDA compiles are byte-identical" diff -r "$WORK/$plan" "$WORK/$plan-again"
done
check "one .cu per pipeline stage, no .c" \
  test "$(cd "$WORK/gpt2_3d" && echo *.c*)" = "stage0.cu stage1.cu"
check "the build file targets sm_90 and links weft::runtime_cuda" \
  bash -c "grep -q '90-real;90-virtual' '$WORK/tiny/CMakeLists.txt' &&
           grep -q 'weft::runtime_cuda' '$WORK/tiny/CMakeLists.txt'"
"$WEFT" compile plans/tiny.lua -o "$WORK/tiny-cpu" 2>/dev/null
# The program text is the CPU backend's but for its own file name and PROGRAM,
# which C++ builds by assignments (its designated initializers must follow
# declaration order): the same fields, the same values.  Both backends save
# the same buffers (attention's log-sum-exp; the LM head nothing: both run
# it fused and chunked in backward, the same wf_lmhead_xent_chunked call,
# ops_loss.c, whose chunk size alone is the backend's and is tiny's whole
# microbatch on both), so the offsets, the activation slot and the scratch
# are the same too; only the planned bytes (CUDA's runtime buffers) and
# .comm (the CPU backend's is always WF_COMM_MPI, checked below) are left out.
fields() { sed -n '/PROGRAM = {/,/^};/p; /make_program(void) {/,/^}/p' "$1" | grep -o '\.[a-z_0-9]* = [^,;]*' |
           grep -v -e '^\.planned_bytes' -e '^\.comm = ' | sort; }
program_text() { tail -n +2 "$1" | sed "/$2/,\$d"; }
check "the program text is the CPU backend's (but for its own file name and PROGRAM's form)" \
  diff <(program_text "$WORK/tiny-cpu/stage0.c" 'PROGRAM = {') <(program_text "$WORK/tiny/stage0.cu" 'make_program(void) {')
# At GPT-2's vocabulary the chunk sizes part (ops_loss.c: at least 512 rows
# on the CPU, 2048 on CUDA, at most tiny's microbatch of 1024 tokens): the
# texts differ in that number alone.
for b in cpu:c cuda:cu; do
  "$WEFT" compile plans/tiny.lua -o "$WORK/v50k-${b%%:*}" --backend ${b%%:*} --set model.vocab=50304 2>/dev/null
done
chunk_as() { sed "s/wf_loss_scale(c), N, 128, V, $1));/wf_loss_scale(c), N, 128, V, CHUNK));/"; }
check "vocab 50304: the head's chunk is 512 rows on the CPU, 1024 on CUDA, the program texts otherwise the same" \
  diff <(program_text "$WORK/v50k-cpu/stage0.c" 'PROGRAM = {' | chunk_as 512) \
       <(program_text "$WORK/v50k-cuda/stage0.cu" 'make_program(void) {' | chunk_as 1024)
fields "$WORK/tiny-cpu/stage0.c" >"$WORK/fields.c"
fields "$WORK/tiny/stage0.cu" >"$WORK/fields.cu"
check "PROGRAM: the same $(wc -l <"$WORK/fields.cu") fields and values in C and C++" \
  bash -c "diff '$WORK/fields.c' '$WORK/fields.cu' && test \$(wc -l <'$WORK/fields.cu') -gt 30"
check "an unknown backend is a usage error (exit 2)" \
  bash -c "'$WEFT' compile plans/tiny.lua -o '$WORK/x' --backend rocm 2>/dev/null; test \$? = 2"

# Every feature's program text is valid C++ (designated initializers in
# declaration order, no C-only conversions): ZeRO-1 with optimizer offload,
# selective recompute under sequence parallelism, PipeDream-2BW, ZeRO-3.
if command -v g++ >/dev/null 2>&1; then
  for v in "z1_off:--set mesh.dp=2 --set zero=1 --set offload.optimizer=cpu" \
           "rs_sp:--set mesh.dp=1 --set mesh.tp=2 --set mesh.sp=true --set recompute=selective" \
           "2bw:--set mesh.dp=1 --set mesh.pp=2 --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0" \
           "z3:--set mesh.dp=2 --set zero=3 --set offload.params=cpu" \
           "fp16_z2:--set mesh.dp=2 --set zero=2 --set precision=fp16"; do
    read -r -a sets <<<"${v#*:}"
    "$WEFT" compile plans/tiny.lua -o "$WORK/${v%%:*}" --backend cuda "${sets[@]}" 2>/dev/null
    check "${v%%:*}: the .cu program text is valid C++" bash -c \
      "for f in '$WORK/${v%%:*}'/*.cu; do g++ -std=c++17 -fsyntax-only -x c++ -Iruntime/include \"\$f\" || exit 1; done"
  done
  check "PipeDream-2BW over two stages takes comm = nccl (the default) for CUDA" \
    grep -q 'P.comm = WF_COMM_NCCL;' "$WORK/2bw/stage1.cu"
  # LLaMA under tensor and pipeline parallelism, in bf16
  "$WEFT" compile plans/llama_tiny.lua -o "$WORK/llama_3d" --backend cuda --set mesh.dp=1 --set mesh.tp=2 \
    --set mesh.pp=2 --set precision=bf16 --set cluster.devices_per_node=4 2>/dev/null
  check "llama tp 2 x pp 2, bf16: the .cu program text is valid C++" bash -c \
    "ls '$WORK/llama_3d'/stage1.cu >/dev/null && for f in '$WORK/llama_3d'/*.cu; do g++ -std=c++17 -fsyntax-only -x c++ -Iruntime/include \"\$f\" || exit 1; done"
fi

# Build: the single-stage plan, the 3D plan (tp collectives, pipeline, two
# programs) and zero-bubble split backward (the B/W kernel halves).
for name in tiny gpt2_3d; do
  check "$name: the generated CUDA project builds" build_plan "$name" plans/$name.lua --backend cuda
done
# the LLaMA family: RMSNorm, RoPE, SwiGLU (llama.cu), grouped-query attention
# (attention.cu's flash kernels), the untied head
check "llama_tiny: the generated CUDA project builds" \
  build_plan llama_tiny plans/llama_tiny.lua --backend cuda
check "llama_tiny: the program calls the LLaMA kernels" \
  bash -c "for f in wf_rmsnorm_fwd wf_rope_bwd wf_swiglu_bwd wf_gqa_attention_fwd wf_gqa_attention_bwd; do
             grep -q \"\$f(c, \" '$WORK/llama_tiny/stage0.cu' || exit 1; done && test -x '$WORK/llama_tiny/build/stage0'"
check "zb-h1: the split-backward CUDA program builds" \
  build_plan zb plans/gpt2_3d.lua --backend cuda --set pipeline.schedule=zb-h1 --set pipeline.virtual=1
# bf16: 16-bit activations (act16: the kernels round them), the parameter
# gradients rounded on the device (stored as 16-bit bits, grad16: the device's
# narrowing, runtime/cuda/dp_comm.cu; else rounding kernels in place), AdamW
# with fp32 masters on the device
check "bf16: the generated CUDA project builds" \
  build_plan tiny_bf16 plans/tiny.lua --backend cuda --set precision=bf16
check "bf16: the built program stores 16-bit activations (act16)" grep -q 'P\.act16 = 1;' "$WORK/tiny_bf16/stage0.cu"
check "bf16: the program rounds on the device (wf_narrow_grads or wf_to_bf16) and links the device optimizer" \
  bash -c "grep -q 'wf_narrow_grads(c, \|wf_to_bf16(c, ' '$WORK/tiny_bf16/stage0.cu' && test -x '$WORK/tiny_bf16/build/stage0' &&
           nm -g --defined-only '$RT/cuda/libweftrt_cuda.a' | grep -q ' T wf_backend_adamw$' &&
           nm -g --defined-only '$RT/cuda/libweftrt_cuda.a' | grep -q ' T wf_backend_to16$'"
# pipeline scatter/gather (tp 2 x pp 2, bf16: slices of 16-bit storage)
check "scatter/gather: the tp 2 x pp 2 bf16 CUDA project builds" \
  build_plan sg plans/tiny.lua --backend cuda --set mesh.dp=1 --set mesh.tp=2 --set mesh.pp=2 --set precision=bf16
check "scatter/gather: its programs send slices and all-gather them" \
  bash -c "grep -q 'wf_pipe_gather(c, ' '$WORK/sg/stage1.cu' && test -x '$WORK/sg/build/stage1'"
check "both stage programs linked" test -x "$WORK/gpt2_3d/build/stage0" -a -x "$WORK/gpt2_3d/build/stage1"
check "linked against cuBLAS" bash -c "ldd '$WORK/tiny/build/stage0' | grep -q libcublas"
check "linked against NCCL" bash -c "ldd '$WORK/tiny/build/stage0' | grep -q libnccl"

# plan.comm reaches the program: NCCL on its own streams (the default) or the
# host-staged MPI fallback; both link (a GPU chooses between them at run time)
check "the program carries plan.comm (nccl by default)" grep -q 'P.comm = WF_COMM_NCCL;' "$WORK/tiny/stage0.cu"
check "the CPU backend's program says MPI (its only one)" grep -q '\.comm = WF_COMM_MPI,' "$WORK/tiny-cpu/stage0.c"
check "comm = mpi: the generated 3D CUDA project builds" \
  build_plan gpt2_3d_mpi plans/gpt2_3d.lua --backend cuda --set comm=mpi
check "comm = mpi: the program carries it" grep -q 'P.comm = WF_COMM_MPI;' "$WORK/gpt2_3d_mpi/stage1.cu"
if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi >/dev/null 2>&1; then
  data=$(make_data)
  "$WORK/tiny/launch.sh" --quiet --steps 1 --data "$data" >"$WORK/nogpu.log" 2>&1 || true
  check "without a GPU: stops naming the rank and the CUDA call" \
    grep -Eq "weft: rank [0-9]+: cuda[A-Za-z]+\(.*\) failed \(runtime/cuda/" "$WORK/nogpu.log"
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
