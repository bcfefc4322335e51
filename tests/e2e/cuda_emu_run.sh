#!/usr/bin/env bash
# Whole generated CUDA programs without a GPU: `weft compile --backend cuda`'s
# stage*.cu built as C++ on the CPU emulator (tests/cuda_emu/program) against
# the emulated runtime (tests/cuda_emu/emu_runtime.cmake: runtime/common and
# runtime/cuda's host files unchanged, the .cu kernels on the emulator, fake
# cuBLASLt), run with WF_EMU_ASYNC=1 (kernels and copies run at the host's
# next wait, so host code that reads device data without waiting reads stale
# data, as on a GPU).
# Each row trains a shrunk plan (tiny; llama_tiny) and compares it with the CPU
# backend's single-rank run of the same plan:
#   fp32  check.sh's CPU-vs-CUDA tolerances: losses within 1e-4 relative,
#         gradient norms within 1e-3, final weights within 1e-3 / 1e-5 absolute
#         (tp 2 too: it moves a weight by 3.4e-4 relative from the CPU's run);
#   equiv dp 2 and pp 2 (mpi, nccl) against the one-rank CPU run: losses
#         within 2e-6 and norms within 1e-6 (equivalence.sh's); weights by
#         lib.sh's gpt2_kernel_noise and adam_reach: every tensor
#         ||a-b|| <= T 2u S ||a-a0|| (S = 4448: the reduction lengths a value's
#         path passes in one step, every kernel here summing in its own order,
#         not only the weight gradients as between two CPU layouts; 2.1e-3 of
#         the updates over T = 4 steps), every element within what AdamW can
#         move it (2 sum lr_t B_t), and the c_attn key bias (elements C..2C-1,
#         zero gradient in exact arithmetic) held to that alone.  Measured:
#         ||a-b||/||a-a0|| <= 1.8e-4 (h.0.attn.c_proj.weight), max|a-b| 9.3e-6;
#         equivalence.sh's T K u (3.1e-5: the weight gradients' sums alone)
#         is too tight for two kernel sets.  A dp 2 bucket reduced by max
#         instead of sum (the replicas still agree) puts every tensor off, up
#         to 1.6 of its updates.
#   bf16  check.sh's: losses within 1e-2;
#   act16 bf16 / fp16 plans, whose activations the CUDA program stores in 16
#         bits (weft/rt.h, act16): the program must say `.act16 = 1`, and since
#         its kernels round each stored value as the CPU's rounding calls do,
#         losses within 1e-4 and gradient norms within 1e-3 of the CPU's run
#         (measured: 1.5e-5 and 5.7e-4 at most; fp16 4e-5).  The gradient norm
#         is the sharp one: with every bf16 store truncating instead of rounding
#         to nearest even, the bf16 and llama_bf16 rows stayed within 3.3e-5 in
#         loss but moved the norm by 1.6e-3 to 5.7e-3 at every step.  A subtle
#         error in one gradient is for the kernel checks (cuda_emu_kernels) and
#         the fp32 rows, which compare weights: in 4 steps of this small model an
#         attention backward fed the wrong tensor moved the bf16 losses by only
#         3e-5 and the norms by 1e-3.
#   r16   bf16 / fp16 VLM plans: the CUDA program stores 16-bit activations
#         (`.act16 = 1`; with weft.vlm's freeze float storage, `.act16 = 0`,
#         each value rounded by the call after its kernel: compiler/
#         ops_vision.c), and its vision kernels (patch embedding, prefix
#         attention) sum in another order than the CPU's before rounding; the
#         CPU's reference stores 16 bits, bit for bit its float storage, whose
#         rounding calls rounding_sites counts by their markers.
#         Unlike act16's typed GEMMs these round each backend's own fp32
#         result (OpenBLAS's fp32 sums; the emulated cuBLASLt's), whose last
#         bits differ, and such a difference flips a 16-bit rounding now and
#         then.  vlm_bf16's step 1 is bit-identical, and so are both runs'
#         checkpoints after it, but from step 2 on they drift:
#         losses within check.sh's bf16 1e-2, gradient norms within lib.sh's
#         storage_noise W = sqrt(T (A + B) / 3) u (A, B: the two programs'
#         rounding calls, B = A under act16; u = 2^-8, fp16 2^-11).  Measured: vlm_bf16 1.1e-4
#         in loss, 1.6e-3 in norm; vlm_fzl_bf16 2.4e-5 / 8.4e-4; vlm_fzv_bf16
#         3.6e-9 / 2.0e-4; vlm_fp16_dp2 1.2e-6 / 0 (the freeze rows were
#         6.2e-5 / 5.7e-3 and 3.7e-5 / 3.2e-3 while the device's GEMMs
#         rounded the frozen fp32 weights to bf16: wf_frozen_weight).
# bf16_ga32 and bf16_ga32_dp2 accumulate weight gradients in fp32
# (plan.grad_accum = "fp32": no rounding call on them, none in the optimizer
# step), against the CPU's run of the same plan with act16's tolerances.
# hs160 runs head size 160 (the 529.6B and 1T GPTs'; tiny at hidden 160, 1
# head), past what the tensor-core kernels take, on attention.cu's fp32
# kernels with 16 threads a row, fp32 so that the weights are compared too.
# The CUDA attention backward forms D = dout . out from the forward's output:
# sel, full, pp2_zbh1 and z3_2bw_nccl run it where that output is recomputed
# (selective, full recompute) or kept in a pipeline slot (split B/W, 2BW),
# fp32 rows because their weight check catches a wrong D (the act16 rows'
# loss and norm tolerances do not).
# The tensor-parallel act16 rows (tp 2; sequence parallel over NCCL; LLaMA)
# compare with the CPU backend's run of the same layout: it rounds each rank's
# row-parallel partial output before the all-reduce or reduce-scatter, so its
# numbers differ from the single-rank run's by more than act16's tolerances
# (tp 2 vs tp 1 on the CPU: 3.3e-5 in loss, 2.5e-4 in norm).  Both backends
# send 16-bit values and sum them in the 16-bit type (plan.tp_comm "auto",
# runtime/common/tp.c: the CPU packs its floats; host MPI's user op, NCCL's
# own sum here the fake's), and at tp 2 that sum rounds once, as the fp32 one
# did (tests/e2e/tp_comm.sh).  Measured: bf16_tp2 1.8e-5 / 2.9e-4,
# bf16_sp2_nccl 2.1e-5 / 4.9e-4 (fp32 sums before: 3.5e-5 and 4.6e-4 at
# most).  Narrowing by truncation instead moved the tp 2 row's norm by 1.4e-3.
# Layouts on two ranks use comm = "mpi" (host-staged), as check.sh does on one
# GPU, or comm = "nccl" on two emulated devices (WF_EMU_DEVICES=2): coll_nccl.c
# over tests/nccl_fake, its operations queued in stream order and captured
# into the CUDA graph with the kernels (emu_nccl.cc); on one device NCCL is
# refused (checked last).  PipeDream-2BW runs over both (bf16_2bw_z1 over dp 2 x
# pp 2 under ZeRO-1 with 16-bit gradients; z3_2bw_nccl under ZeRO-3, fp32,
# each weight version a parameter shard, gradients sharded as under ZeRO-2):
# the tied wte and the metrics stay host MPI beside NCCL's streams (twobw.c).
# (z3_2bw_nccl was z2_2bw_nccl, zero = 2: 7.1 CPU-s with ROWS, 6.5 at zero = 3.)
# (They replaced two dp 1 rows, pp2_2bw and pp2_2bw_nccl, whose dp 1 paths
# pp2_tp2_2bw_nccl and bf16_2bw_nccl still run; measured together with
# ROWS: 12.1 CPU-s before, 12.6 after, one run each.)
# ZeRO-3's offloaded parameter shard is pinned host memory, which the emulated
# NCCL refuses as a buffer, as NCCL reads device memory only (z3_off: each
# gather copies the shard to the device first), here under zb-h1 over dp 2 x pp 2
# (B gathers the weights, W none; was dp 2 alone: 5.5 CPU-s with ROWS either way).  The
# one-rank fp32 row replays a captured CUDA graph from step 2 (graph.c; emu.cc
# records the capture): with --no-graph, and resumed from its own checkpoint
# after step 2, the program must give identical losses.  A broken warp shuffle
# (WF_EMU_FAULT=shfl_down) must make that row fail.  The fp16 row's dynamic loss
# scale doubles at step 3, so its graph is captured again (graph.c); with an
# overflow injected at step 2, the graph run and --no-graph must agree bit for bit.
# Every row also checks the memory plan: weft's own allocations after the
# warm-up step at most the plan and within 0.5% of it (within_plan below).
# Graph combinations (the last rows): 2BW with tp 2 over NCCL on four ranks
# and four emulated devices (both weight versions' graphs, a drain for a
# periodic checkpoint, a resume), bf16 tp 4 over NCCL, and fp16 with 2BW's
# delayed update on one rank (pp > 1 refuses fp16); the 2BW rows against
# --no-graph and their own straight runs, bit for bit.  bf16 tp 4 sums four
# partials in 16 bits on both sides (three roundings each, possibly in other
# orders: MPI's on the CPU, the fake NCCL's on the emulator): 2.2e-5 / 5.6e-4
# of the CPU's run (fp32 sums before: 1.3e-5 / 4.9e-4), within act16's
# 1e-4 / 1e-3.
# Pipeline scatter/gather (pipeline.scatter_gather, on by default at tp 2 x
# pp 2 without sp): pp2_tp2_sg (host MPI, fp32) and bf16_pp2_tp2_nccl (16-bit
# storage, so the slices are of 16-bit pairs; NCCL's all-gather captured in
# the graph) and pp2_tp2_2bw_nccl send 1/2 slices and all-gather them; an
# all-gather copies, so they keep the tolerances of tp2 and bf16_tp2 (the
# pipeline changes no arithmetic), and their programs must say wf_pipe_gather.
# bf16_dp2_dpc: bf16_dp2 with its gradient buckets all-reduced in bf16
# (plan.dp_comm; packed by runtime/cuda/dp_comm.cu through the planned
# staging buffer, comm = "mpi"): at dp 2 the 16-bit sum of two rounded
# gradients is the fp32 sum rounded once (tests/e2e/dp_comm.sh), so it keeps
# bf16_dp2's act16 tolerances; the program must say .dp_comm16 = 1.
# bf16_z1_dpc_nccl likewise over NCCL under ZeRO-1 (ncclBfloat16
# reduce-scatters on the comm stream), and bf16_z2_dpc_nccl
# with ZeRO-2's in-place bf16 reduce-scatter (NCCL's own in-place form, no scratch).
# (Under 16-bit weight gradients, below, the buckets' bits are the message:
# nothing is packed.)
# The LM head runs fused and chunked in backward (ops_loss.c; runtime/cuda/
# xent.cu, xent_vocab.c), one chunk of the microbatch's 64 tokens in the rows
# above but bf16_tp2 and vlm, which cut it into chunks of 24 and 15 rows
# (lmhead_chunk): the vocabulary-parallel head with its all-reduces per
# chunk, and a VLM (the whole head, fp32) whose first chunk holds image
# placeholders only (rows 0-14 of its 24: targets -1; the CPU skips such a
# chunk, CUDA computes its zero dlogits), against the CPU's unchunked runs
# with their rows' tolerances: chunking only splits dwte's sum over tokens.
# 16-bit working parameters (plan.param_storage "auto", compiler/param16.c):
# every act16 row stores them in 2 bytes (the program must say .param16 = 1
# and plan no weight copies or cast buffer) but the 2BW rows and bf16_pf32
# (param_storage = "fp32": float weights, the GEMMs' 16-bit copies); the CPU
# references store them so too.  The GEMMs read the stored bits in place, the
# other kernels widened floats, AdamW writes the rounded bits, ZeRO's
# all-gathers move 16-bit values: bf16_z1_nccl (ZeRO-1, NCCL's all-gather
# of 16-bit values), bf16_z3 and fp16_z3_nccl (ZeRO-3's 16-bit shards and
# gather buffers over MPI and NCCL), fp16_tp2 keep act16's
# tolerances (measured, loss / norm: bf16 1.4e-5 / 5.2e-4, fp16 2.1e-6 /
# 4.3e-5, bf16_z1_nccl 1.0e-5 / 6.0e-4, bf16_z3 1.4e-5 / 4.9e-4, fp16_z1 (ZeRO-1,
# dp 2; left out of the rows for the suite's time) 2.1e-6 / 7.6e-5, fp16_z3_nccl 2.1e-6 / 4.7e-5, bf16_tp2 1.3e-5 / 1.9e-4,
# fp16_tp2 5.1e-6 / 4.1e-5); bf16 against bf16_pf32 is bit for bit (below).
# AdamW storing bf16 bits by truncation instead of rounding to nearest even
# failed both: the bf16 row's norm by 3.5e-3, and 28 of 28 weight tensors
# off bf16_pf32's.
# 16-bit weight gradients (plan.grad_accum "auto", compiler/grad16.c): the
# act16 rows whose layouts save by it store them in 2 bytes (the program says
# .grad16 = 1; widened per op and for their sums on the device, dp_comm.cu
# and grad16.cu; AdamW, the norm and fp16's overflow check read the bits,
# optim.cu): dp 1 (bf16, fp16, llama_bf16), tp 2 (bf16_tp2; with sp:
# bf16_sp2_nccl), dp 2 with fp32 sums through the float staging (bf16_dp2,
# compiled with WEFT_GRAD16=1: the staging outweighs what it saves there)
# and with bf16 sums of the bits themselves (bf16_dp2_dpc), ZeRO-1 with fp32
# sums (bf16_z1_nccl) and with bf16 sums reduce-scattered in place in the
# 16-bit arena (bf16_z1_dpc_nccl), ZeRO-2 with bf16 sums added into its float shard
# (bf16_z2_dpc_nccl), ZeRO-3 with fp32 sums through the float staging
# (fp16_z3_nccl, compiled with WEFT_GRAD16=1 as bf16_dp2), and PipeDream-2BW
# on one rank (fp16_2bw) and over pp 2 (bf16_2bw_nccl, compiled with
# WEFT_GRAD16=1 as bf16_dp2: the tied wte's gradient widened, sent and added
# into the 16-bit one rounded once on the device, runtime/common/twobw.c;
# its send waits for the device, without which the emulator's deferred
# kernels leave it stale), checked below,
# with their act16 tolerances (the CPU
# references store them so too).  Every
# value is the one the float arena held, so bf16 (16-bit parameters and
# gradients) against bf16_pf32, compiled with WEFT_GRAD16=0 (float
# parameters and gradients), stays bit for bit.
# Add a row: one line in `rows` (name, CPU reference, kind, plan, --set
# overrides); a new reference: one build_ref line.  ROWS="one dp2" runs only
# those rows (the graph and fault checks run with the row `one`).
source "$(dirname "$0")/lib.sh"
# WEFT_TIMEOUT_SCALE (set by a sanitized build, bench/sanitize.sh) multiplies each run's `timeout`.
RT=${WEFT_CUDA_EMU_RUNTIME:?set WEFT_CUDA_EMU_RUNTIME to the folder of weft-runtime-emu.cmake}
PROG=${WEFT_CUDA_EMU_PROGRAM:?set WEFT_CUDA_EMU_PROGRAM to tests/cuda_emu/program}
# four emulated devices: the ranks of a layout use one each (device.c), up to
# four (tp 2 x pp 2, tp 4)
export OMP_NUM_THREADS=1 WF_EMU_ASYNC=1 WF_EMU_DEVICES=4
DATA=$(make_data)
small=(--set model.hidden=64 --set model.seq=32 --set model.layers=2 --set train.steps=4
       --set data.train="$DATA" --set batch.global=4)
# weft.vlm plans (plans/vlm_*.lua: their own small sizes) read image + text
# records; init_std 0.02 as e2e_vlm_equivalence runs them
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq 24 --count 64 --seed 5 >/dev/null
vlm_small=(--set train.steps=4 --set data.train="$WORK/vlm.bin" --set batch.global=4
           --set model.vision.init_std=0.02 --set model.llm.init_std=0.02)
sizes() { case $1 in plans/vlm_*) echo vlm_small ;; *) echo small ;; esac; }  # sizes PLAN: the array's name

# Two jobs at a time (EMU_JOBS): each build and each emulated rank is one
# single-threaded process, and CI has two cores.  A job's status goes to
# $WORK/NAME.rc, its output to $WORK/NAME.out.
JOBS=${EMU_JOBS:-2}
spawn() {  # spawn NAME COMMAND...: runs COMMAND in the background
  local name=$1
  shift
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  { if "$@" >"$WORK/$name.out" 2>&1; then echo 0; else echo 1; fi >"$WORK/$name.rc"; } &
}

# build_ref NAME PLAN [--set ...]: the CPU backend's single-rank run, the
# reference (in the background: the references are awaited below)
ref_job() {
  local name=$1 plan=$2
  shift 2
  local -n base=$(sizes "$plan")
  build_plan "$name" "$plan" "${base[@]}" --set mesh.dp=1 --set batch.micro=2 "$@" &&
    run_plan "$name" --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" >"$WORK/$name.log" 2>&1 &&
    { [ "$name" != ref ] || run_plan ref --steps 0 --save "$WORK/ref.init" >>"$WORK/ref.log" 2>&1; }  # a0: equiv rows
}
# (spawned below, once the rows are known: with ROWS, only the references
# the selected rows compare with)
build_ref() { ref_args+=("$(printf '%q ' "$@")"); }
ref_args=()
build_ref ref plans/tiny.lua
build_ref ref_bf16 plans/tiny.lua --set precision=bf16
build_ref ref_llama plans/llama_tiny.lua
# fp16: a scale that doubles every 2 clean steps, so that it changes inside the
# run and the CUDA graph captured at step 2 is captured again at step 3
fp16_scale=(--set precision=fp16 --set loss_scale.window=2 --set loss_scale.hysteresis=1)
build_ref ref_fp16 plans/tiny.lua "${fp16_scale[@]}"
build_ref ref_llama_bf16 plans/llama_tiny.lua --set precision=bf16
build_ref ref_bf16_full plans/tiny.lua --set precision=bf16 --set recompute=full
# 2BW: five steps, so that its NCCL row replays a graph captured earlier (step 4)
build_ref ref_2bw plans/tiny.lua --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 --set train.steps=5
build_ref ref_2bw_bf16 plans/tiny.lua --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 --set train.steps=5 --set precision=bf16
# tensor parallelism in 16 bits: the CPU backend's run of the same layout (its
# row-parallel partials are rounded before the sum, unlike tp 1's outputs)
build_ref ref_bf16_tp2 plans/tiny.lua --set precision=bf16 --set mesh.tp=2
build_ref ref_bf16_sp2 plans/tiny.lua --set precision=bf16 --set mesh.tp=2 --set mesh.sp=true
build_ref ref_llama_bf16_tp2 plans/llama_tiny.lua --set precision=bf16 --set mesh.tp=2
# 2BW with tp 2 under graphs, resumed mid-run: six steps (the checks below)
build_ref ref_2bw6 plans/tiny.lua --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 --set train.steps=6
# tp 4 in 16 bits: four partials per fp32 sum (at tp 2 a 16-bit sum of two
# 16-bit partials rounds as the fp32 one does)
build_ref ref_bf16_tp4 plans/tiny.lua --set precision=bf16 --set mesh.tp=4
build_ref ref_fp16_tp2 plans/tiny.lua "${fp16_scale[@]}" --set mesh.tp=2
# fp16 with 2BW's delayed update on one rank (pp > 1 refuses fp16: checked below)
build_ref ref_fp16_2bw plans/tiny.lua "${fp16_scale[@]}" --set pipeline.schedule=pipedream-2bw
# head size 160 (the 530B and 1T GPTs'): attention.cu's 16-thread rows, 16-row tiles
hs160=(--set model.hidden=160 --set model.heads=1)
build_ref ref_hs160 plans/tiny.lua "${hs160[@]}"
# plan.grad_accum = "fp32": weight gradients accumulated in floats (two
# microbatches a step on one rank)
build_ref ref_bf16_ga32 plans/tiny.lua --set precision=bf16 --set grad_accum=fp32
# weft.vlm: a ViT, LLaVA's projector and a LLaMA or a GPT-2
build_ref ref_vlm plans/vlm_llama.lua
build_ref ref_vlm_gpt2 plans/vlm_tiny.lua
# in 16 bits (the encoder's values rounded as the LLM's), and with freeze:
# the frozen weights fp32 under bf16 on both backends (no master holds them);
# a frozen GPT-2 runs its fused pairs' input halves alone (fuse.c)
build_ref ref_vlm_bf16 plans/vlm_llama.lua --set precision=bf16
build_ref ref_vlm_fp16 plans/vlm_llama.lua "${fp16_scale[@]}"
build_ref ref_vlm_fzv plans/vlm_llama.lua --set model.freeze.vision=true
build_ref ref_vlm_fzv_bf16 plans/vlm_llama.lua --set model.freeze.vision=true --set precision=bf16
build_ref ref_vlm_fzl plans/vlm_tiny.lua --set model.freeze.llm=true
build_ref ref_vlm_fzl_bf16 plans/vlm_tiny.lua --set model.freeze.llm=true --set precision=bf16

# build_emu NAME PLAN [--set ...]: compiled for CUDA, built on the emulator
build_emu() {
  local name=$1 plan=$2
  shift 2
  local -n base=$(sizes "$plan")
  local grad16=${WEFT_GRAD16-}
  case $name in  # the compiler's grad16 decision (compiler/grad16.c) overridden:
    bf16_pf32) grad16=0 ;;  # float gradients too (the 16-bit ones' bit-for-bit twin, below)
    bf16_dp2) grad16=1 ;;   # 16-bit gradients, though the fp32 dp sums' staging outweighs them here
    fp16_z3_nccl) grad16=1 ;;  # ZeRO-3's bucket buffers in 16 bits, though the float scratch and staging outweigh them here
    bf16_2bw_nccl) grad16=1 ;;  # 2BW's tied wte exchange on 16-bit gradients, though the head's widening outweighs them here
    bf16_2bw_z1) grad16=1 ;;    # ... under ZeRO-1: the tied wte's float part sent and added, rounded by the step
  esac
  WEFT_GRAD16=$grad16 "$WEFT" compile "$plan" -o "$WORK/$name" --backend cuda "${base[@]}" "$@" 2>"$WORK/$name.compile.log" &&
    configure "$PROG" "$WORK/$name/build" -DWEFT_PROGRAM="$WORK/$name" -DWEFT_RUNTIME="$RT" \
      >"$WORK/$name.cmake.log" 2>&1 &&
    cmake --build "$WORK/$name/build" >"$WORK/$name.build.log" 2>&1
}

# compare NAME REF KIND: prints the differences; 0 within KIND's tolerances
compare() {
  local name=$1 ref=$2 kind=$3 loss norm w ok=0
  # fp32: check.sh's CPU-vs-CUDA tolerances; equiv: equivalence.sh's (a
  # layout against the single-rank losses and weights); bf16: check.sh's
  local tl=1e-4 tn=1e-3 tw=1e-3
  [ "$kind" = equiv ] && tl=2e-6 tn=1e-6
  if [ "$kind" = r16 ]; then  # each value rounded after its kernel, or as it stores it (act16)
    local sa sb u16=0.00390625 w act=1
    case $name in vlm_fz*) act=0 ;; esac  # freeze: float storage on CUDA (compiler/ops_vision.c)
    grep -q "\.act16 = $act" "$WORK/$name"/stage0.cu || { echo "$name/stage0.cu: not .act16 = $act"; return 1; }
    grep -q 'precision = WF_FP16' "$WORK/$name"/stage0.cu && u16=0.00048828125
    sa=$(rounding_sites "$WORK/$ref")
    sb=$(( $(cat "$WORK/$name"/stage*.cu | grep -c 'wf_to_[bf][fp]16(c, [ad] +') + 1 ))
    [ $act = 1 ] && sb=$sa  # the CUDA kernels store rounded where the CPU's program marks its roundings
    w=$(storage_noise "$(grep -c '"loss"' "$WORK/$ref.jsonl")" $u16 "$sa" "$sb")
    loss=$(same_field loss "$WORK/$ref.jsonl" "$WORK/$name.jsonl" 1e-2) || ok=1
    norm=$(same_field grad_norm "$WORK/$ref.jsonl" "$WORK/$name.jsonl" "$w") || ok=1
    echo "$loss, $norm (W = $w)"
    return $ok
  fi
  if [ "$kind" = act16 ]; then
    grep -q '\.act16 = 1' "$WORK/$name"/stage0.cu || { echo "act16 is off in $name/stage0.cu"; return 1; }
    case $name in  # 16-bit working parameters (param16) but under 2BW and param_storage = "fp32"
      *2bw*|*_pf32) ! grep -q '\.param16 = 1' "$WORK/$name"/stage0.cu || { echo "$name stores 16-bit parameters"; return 1; } ;;
      *) grep -q '\.param16 = 1' "$WORK/$name"/stage0.cu && grep -q '\.weight16_numel = 0L' "$WORK/$name"/stage0.cu &&
           grep -q '\.cast_numel = 0L' "$WORK/$name"/stage0.cu || { echo "$name: no 16-bit parameters"; return 1; } ;;
    esac
    case $name in *_ga32*)  # fp32 accumulation: the runtime told, no weight gradient rounded
      grep -q '\.grad_accum32 = 1' "$WORK/$name"/stage0.cu && ! grep -q 'wf_to_bf16(c, g + ' "$WORK/$name"/stage*.cu ||
        { echo "$name rounds its weight gradients"; return 1; } ;;
    esac
    loss=$(same_field loss "$WORK/$ref.jsonl" "$WORK/$name.jsonl" 1e-4) || ok=1
    norm=$(same_field grad_norm "$WORK/$ref.jsonl" "$WORK/$name.jsonl" 1e-3) || ok=1
    echo "$loss, $norm"
    return $ok
  fi
  if [ "$kind" = bf16 ]; then
    loss=$(same_field loss "$WORK/$ref.jsonl" "$WORK/$name.jsonl" 1e-2) || ok=1
    echo "$loss"
    return $ok
  fi
  loss=$(same_field loss "$WORK/$ref.jsonl" "$WORK/$name.jsonl" $tl) || ok=1
  norm=$(same_field grad_norm "$WORK/$ref.jsonl" "$WORK/$name.jsonl" $tn) || ok=1
  if [ "$kind" = equiv ]; then  # the header; the sizes are `small`'s, on plans/tiny.lua (4 heads, vocab 256)
    local steps reach
    steps=$(grep -c '"loss"' "$WORK/$ref.jsonl")
    reach=$(adam_reach "$WORK/$ref/stage0.c" "$WORK/$ref.jsonl") || ok=1
    w=$("$WEFT" ckpt diff "$WORK/$ref.ckpt/model.safetensors" "$WORK/$name.ckpt/model.safetensors" \
        --norm-tol "$(gpt2_kernel_noise "$steps" 2 64 4 32 256 $((4 * 32)))" \
        --from "$WORK/$ref.init/model.safetensors" --bound "$reach" --noise "h.*.attn.c_attn.bias:64:128" |
        tail -n 1) || ok=1
    echo "$loss, $norm; $w"
    return $ok
  fi
  w=$("$WEFT" ckpt diff "$WORK/$ref.ckpt/model.safetensors" "$WORK/$name.ckpt/model.safetensors" \
      --tol $tw --atol 1e-5 | tail -n 1) || ok=1
  echo "$loss, $norm; $w"
  return $ok
}

# within_plan NAME: after the warm-up step weft's own device and pinned
# allocations (runtime/cuda/device.c counts every one) are at most the plan
# (compiler/memory.c: the arenas, weft/runtime_buffers.h's buffers) and within
# 0.5% of it on every rank.  Measured: 1.000000 exactly where nothing is
# planned as a worst case; 0.998 under act16, whose plan counts linear.cu's
# DGELU fallback buffer (64 KiB here), which the emulated cuBLASLt never
# needs, and every distinct bias width for gemm.cu's 16-bit bias copies.
within_plan() {
  local name=$1 line lo hi
  line=$(grep -o 'device memory: .*' "$WORK/$name.log" | head -n 1)
  read -r lo hi < <(sed -n 's/.*over ranks \([0-9.]*\)x\.\.\([0-9.]*\)x).*/\1 \2/p' <<<"$line")
  # rank 0 to the byte, from its last --metrics line
  read -r held planned < <(tail -n 1 "$WORK/$name.jsonl" | awk '{
    match($0, /"device_alloc_bytes": [0-9]+/); d = substr($0, RSTART + 22, RLENGTH - 22)
    match($0, /"pinned_alloc_bytes": [0-9]+/); h = substr($0, RSTART + 22, RLENGTH - 22)
    match($0, /"mem_planned_bytes": [0-9]+/); p = substr($0, RSTART + 21, RLENGTH - 21)
    print d + h, p }')
  echo "memory ${held:-?} of ${planned:-?} B planned (ranks ${lo:-?}x..${hi:-?}x)"
  [ -n "$lo" ] && [ -n "$held" ] && [ "$held" -le "$planned" ] &&
    awk -v lo="$lo" -v hi="$hi" 'BEGIN { exit !(hi <= 1 && lo >= 0.995) }'
}

# run_row NAME REF KIND [--set ...]: builds, runs and compares one layout
run_row() {
  local name=$1 ref=$2 kind=$3 start=$SECONDS out
  shift 3
  if ! build_emu "$name" "$@"; then
    echo "FAIL $name: does not build on the emulator: $(tail -n 3 "$WORK/$name.compile.log" "$WORK/$name.build.log")"
    return 1
  fi
  if ! timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$name/launch.sh" --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" \
       >"$WORK/$name.log" 2>&1; then
    # the rank's own error, not mpirun's closing words
    echo "FAIL $name: did not run: $(grep -E '^(weft: |cuda_emu|emulated NCCL)' "$WORK/$name.log" | head -n 2 ||
                                      tail -n 3 "$WORK/$name.log")"
    return 1
  fi
  local mem ok=0
  out=$(compare "$name" "$ref" "$kind") || ok=1
  mem=$(within_plan "$name") || ok=1
  if [ $ok = 0 ]; then
    echo "ok   $name (emulated CUDA vs CPU, $((SECONDS - start)) s): $out; $mem"
  else
    echo "FAIL $name (emulated CUDA vs CPU, $((SECONDS - start)) s): $out; $mem"
    return 1
  fi
}

# name       reference  kind plan                 overrides
rows=(
  "one       ref        fp32 plans/tiny.lua       --set mesh.dp=1 --set batch.micro=2"
  "bf16      ref_bf16   act16 plans/tiny.lua      --set mesh.dp=1 --set batch.micro=2 --set precision=bf16"
  "fp16      ref_fp16   act16 plans/tiny.lua      --set mesh.dp=1 --set batch.micro=2 ${fp16_scale[*]}"
  "bf16_pp2  ref_bf16   act16 plans/tiny.lua      --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=1 --set precision=bf16 --set comm=mpi"
  "bf16_full ref_bf16_full act16 plans/tiny.lua  --set mesh.dp=1 --set batch.micro=2 --set precision=bf16 --set recompute=full"
  "sel       ref        fp32 plans/tiny.lua       --set mesh.dp=1 --set batch.micro=2 --set recompute=selective"
  "full      ref        fp32 plans/tiny.lua       --set mesh.dp=1 --set batch.micro=2 --set recompute=full"
  "bf16_tp2  ref_bf16_tp2 act16 plans/tiny.lua    --set mesh.dp=1 --set mesh.tp=2 --set batch.micro=2 --set precision=bf16 --set comm=mpi --set lmhead_chunk=24"
  "bf16_sp2_nccl ref_bf16_sp2 act16 plans/tiny.lua --set mesh.dp=1 --set mesh.tp=2 --set mesh.sp=true --set batch.micro=2 --set precision=bf16 --set comm=nccl"
  "llama_bf16_tp2 ref_llama_bf16_tp2 act16 plans/llama_tiny.lua --set mesh.dp=1 --set mesh.tp=2 --set batch.micro=2 --set precision=bf16 --set comm=mpi"
  "llama_bf16 ref_llama_bf16 act16 plans/llama_tiny.lua --set mesh.dp=1 --set batch.micro=2 --set precision=bf16"
  "dp2       ref        equiv plans/tiny.lua      --set mesh.dp=2 --set batch.micro=1 --set comm=mpi"
  "pp2       ref        equiv plans/tiny.lua      --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=1 --set comm=mpi"
  "tp2       ref        fp32 plans/tiny.lua       --set mesh.dp=1 --set mesh.tp=2 --set batch.micro=2 --set comm=mpi"
  "z3_nccl   ref        equiv plans/tiny.lua      --set mesh.dp=2 --set batch.micro=1 --set comm=nccl --set zero=3 --set buckets.mb=0.05"
  "z3_off    ref        equiv plans/tiny.lua      --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=1 --set comm=nccl --set zero=3 --set buckets.mb=0.05 --set offload.params=cpu --set pipeline.schedule=zb-h1"
  "pp2_nccl  ref        equiv plans/tiny.lua      --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=1 --set comm=nccl"
  "pp2_zbh1  ref        fp32 plans/tiny.lua       --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=1 --set comm=mpi --set pipeline.schedule=zb-h1"
  "bf16_2bw_z1 ref_2bw_bf16 act16 plans/tiny.lua --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=1 --set comm=mpi --set zero=1 --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 --set train.steps=5 --set precision=bf16"
  "z3_2bw_nccl ref_2bw fp32 plans/tiny.lua       --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=1 --set comm=nccl --set zero=3 --set offload.params=cpu --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 --set train.steps=5"
  "bf16_2bw_nccl ref_2bw_bf16 act16 plans/tiny.lua --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=1 --set comm=nccl --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 --set train.steps=5 --set precision=bf16"
  "bf16_dp2  ref_bf16   act16 plans/tiny.lua       --set mesh.dp=2 --set batch.micro=1 --set precision=bf16 --set comm=mpi"
  "bf16_dp2_dpc ref_bf16   act16 plans/tiny.lua    --set mesh.dp=2 --set batch.micro=1 --set precision=bf16 --set comm=mpi --set dp_comm=bf16"
  "bf16_z1_dpc_nccl ref_bf16 act16 plans/tiny.lua --set mesh.dp=2 --set batch.micro=1 --set precision=bf16 --set comm=nccl --set dp_comm=bf16 --set zero=1 --set buckets.mb=0.05"
  "bf16_z2_dpc_nccl ref_bf16 act16 plans/tiny.lua --set mesh.dp=2 --set batch.micro=1 --set precision=bf16 --set comm=nccl --set dp_comm=bf16 --set zero=2 --set buckets.mb=0.05"
  "bf16_pp2_nccl ref_bf16 act16 plans/tiny.lua     --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=1 --set precision=bf16 --set comm=nccl"
  "bf16_z3   ref_bf16   act16 plans/tiny.lua       --set mesh.dp=2 --set batch.micro=1 --set precision=bf16 --set comm=mpi --set zero=3 --set buckets.mb=0.05"
  "llama     ref_llama  fp32 plans/llama_tiny.lua --set mesh.dp=1 --set batch.micro=2"
  "pp2_tp2_2bw_nccl ref_2bw6 fp32 plans/tiny.lua --set mesh.dp=1 --set mesh.pp=2 --set mesh.tp=2 --set batch.micro=1 --set comm=nccl --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 --set train.steps=6 --set train.ckpt_every=3"
  "pp2_tp2_sg ref       fp32 plans/tiny.lua       --set mesh.dp=1 --set mesh.pp=2 --set mesh.tp=2 --set batch.micro=1 --set comm=mpi"
  "bf16_pp2_tp2_nccl ref_bf16_tp2 act16 plans/tiny.lua --set mesh.dp=1 --set mesh.pp=2 --set mesh.tp=2 --set batch.micro=1 --set precision=bf16 --set comm=nccl"
  "bf16_tp4_nccl ref_bf16_tp4 act16 plans/tiny.lua --set mesh.dp=1 --set mesh.tp=4 --set batch.micro=2 --set precision=bf16 --set comm=nccl"
  "fp16_2bw  ref_fp16_2bw act16 plans/tiny.lua  --set mesh.dp=1 --set batch.micro=2 ${fp16_scale[*]} --set pipeline.schedule=pipedream-2bw"
  "hs160     ref_hs160  fp32 plans/tiny.lua       --set mesh.dp=1 --set batch.micro=2 ${hs160[*]}"
  "bf16_ga32 ref_bf16_ga32 act16 plans/tiny.lua   --set mesh.dp=1 --set batch.micro=2 --set precision=bf16 --set grad_accum=fp32"
  "bf16_pf32 ref_bf16   act16 plans/tiny.lua      --set mesh.dp=1 --set batch.micro=2 --set precision=bf16 --set param_storage=fp32"
  "bf16_z1_nccl ref_bf16 act16 plans/tiny.lua     --set mesh.dp=2 --set batch.micro=1 --set precision=bf16 --set comm=nccl --set zero=1 --set buckets.mb=0.05"
  "fp16_z3_nccl ref_fp16 act16 plans/tiny.lua     --set mesh.dp=2 --set batch.micro=1 ${fp16_scale[*]} --set comm=nccl --set zero=3 --set buckets.mb=0.05"
  "fp16_tp2  ref_fp16_tp2 act16 plans/tiny.lua    --set mesh.dp=1 --set mesh.tp=2 --set batch.micro=2 ${fp16_scale[*]} --set comm=mpi"
  "bf16_ga32_dp2 ref_bf16_ga32 act16 plans/tiny.lua --set mesh.dp=2 --set batch.micro=1 --set precision=bf16 --set grad_accum=fp32 --set comm=mpi"
  "vlm       ref_vlm    fp32 plans/vlm_llama.lua  --set mesh.dp=1 --set batch.micro=2 --set lmhead_chunk=15"
  "vlm_gpt2  ref_vlm_gpt2 fp32 plans/vlm_tiny.lua --set mesh.dp=1 --set batch.micro=2"
  "vlm_tp2_sp ref_vlm   fp32 plans/vlm_llama.lua  --set mesh.dp=1 --set mesh.tp=2 --set mesh.sp=true --set batch.micro=2 --set comm=mpi"
  "vlm_bf16  ref_vlm_bf16 r16 plans/vlm_llama.lua --set mesh.dp=1 --set batch.micro=2 --set precision=bf16"
  "vlm_fp16_dp2 ref_vlm_fp16 r16 plans/vlm_llama.lua --set mesh.dp=2 --set batch.micro=1 ${fp16_scale[*]} --set comm=mpi"
  "vlm_fzv   ref_vlm_fzv fp32 plans/vlm_llama.lua  --set mesh.dp=1 --set batch.micro=2 --set model.freeze.vision=true"
  "vlm_fzv_bf16 ref_vlm_fzv_bf16 r16 plans/vlm_llama.lua --set mesh.dp=1 --set batch.micro=2 --set model.freeze.vision=true --set precision=bf16"
  "vlm_fzl   ref_vlm_fzl fp32 plans/vlm_tiny.lua   --set mesh.dp=1 --set batch.micro=2 --set model.freeze.llm=true"
  "vlm_fzl_bf16 ref_vlm_fzl_bf16 r16 plans/vlm_tiny.lua --set mesh.dp=1 --set batch.micro=2 --set model.freeze.llm=true --set precision=bf16"
)
ref_needed() {  # ref_needed REF: a selected row compares with it
  local row name ref
  for row in "${rows[@]}"; do
    read -r name ref _ <<<"$row"
    case " ${ROWS:-$name} " in *" $name "*) [ "$ref" = "$1" ] && return 0 ;; esac
  done
  return 1
}
for args in "${ref_args[@]}"; do
  eval "set -- $args"
  if ref_needed "$1"; then spawn "$1" ref_job "$@"; fi
done
wait
for r in "$WORK"/ref*.rc; do
  [ "$(cat "$r")" = 0 ] || { echo "FAIL the CPU reference $(basename "$r" .rc): $(tail -n 3 "${r%.rc}.out")"; exit 1; }
done
selected=()
for row in "${rows[@]}"; do
  read -r name ref kind plan sets <<<"$row"
  case " ${ROWS:-$name} " in *" $name "*) ;; *) continue ;; esac  # ROWS="one dp2": only those
  read -r -a sets <<<"$sets"
  spawn "row_$name" run_row "$name" "$ref" "$kind" "$plan" "${sets[@]}"
  selected+=("$name")
done
wait
for name in "${selected[@]}"; do  # in the table's order
  cat "$WORK/row_$name.out"
  if [ "$(cat "$WORK/row_$name.rc")" = 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

for name in bf16_dp2_dpc bf16_z1_dpc_nccl bf16_z2_dpc_nccl; do
  case " ${ROWS:-$name} " in *" $name "*)
    check "$name: the CUDA program sums bf16 gradients" grep -q 'dp_comm16 = 1' "$WORK/$name/stage0.cu" ;;
  esac
done
# 16-bit weight gradients (the rows passed above with them)
for name in bf16 fp16 llama_bf16 bf16_tp2 bf16_sp2_nccl bf16_dp2 bf16_dp2_dpc bf16_z1_nccl bf16_z1_dpc_nccl bf16_z2_dpc_nccl fp16_z3_nccl fp16_2bw bf16_2bw_nccl bf16_2bw_z1; do
  case " ${ROWS:-$name} " in *" $name "*)
    check "$name: the CUDA program stores 16-bit weight gradients" \
      bash -c "grep -q '\.grad16 = 1' '$WORK/$name/stage0.cu' && grep -q 'wf_narrow_grads(c, ' '$WORK/$name/stage0.cu'" ;;
  esac
done
case " ${ROWS:-bf16_pf32} " in *" bf16_pf32 "*)
  check "bf16_pf32: the CUDA program keeps float weight gradients" bash -c "! grep -q '\.grad16 = 1' '$WORK/bf16_pf32/stage0.cu'" ;;
esac
# a VLM under sequence parallelism: each tp rank embeds and merges its own
# rows with vision.cu's row kernels (measured: 18 s for the row without sp
# it replaced, 20 s with it, on a busy 2-core machine)
case " ${ROWS:-vlm_tp2_sp} " in *" vlm_tp2_sp "*)
  check "vlm_tp2_sp: the patch embedding and the hand-off on each tp rank's rows in the CUDA program" \
    eval 'grep -q "wf_patch_embed_rows_fwd(c, " "$WORK/vlm_tp2_sp/stage0.cu" &&
          grep -q "wf_image_merge_rows_bwd(c, " "$WORK/vlm_tp2_sp/stage0.cu"' ;;
esac
for name in pp2_tp2_sg bf16_pp2_tp2_nccl pp2_tp2_2bw_nccl; do
  case " ${ROWS:-$name} " in *" $name "*)
    check "$name: slices and their all-gathers in the CUDA program" \
      grep -q 'wf_pipe_gather(c, ' "$WORK/$name/stage1.cu" ;;
  esac
done

# freeze under bf16: the frozen part's weights stay their fp32 initial
# values on the emulated device as on the CPU (ckpt diff lists every tensor
# that differs at all between the two runs' checkpoints; the trained parts
# differ within act16's tolerances, the frozen ones must not at all)
frozen_same() {  # frozen_same NAME REF PATTERN: no tensor matching PATTERN differs
  local moved
  moved=$("$WEFT" ckpt diff "$WORK/$2.ckpt/model.safetensors" "$WORK/$1.ckpt/model.safetensors" --tol 0 --atol 0 |
          sed -n 's/^\([^ ]*\) *max|a-b|.*/\1/p') || true
  [ -n "$moved" ] && ! grep -q "$3" <<<"$moved"  # (the trained parts differ: the diff did run)
}
case " ${ROWS:-vlm_fzv_bf16} " in *" vlm_fzv_bf16 "*)
  check "vlm_fzv_bf16: the frozen vision tower bit-identical to the CPU's (fp32, untouched)" \
    frozen_same vlm_fzv_bf16 ref_vlm_fzv_bf16 '^model\.vision_tower\.' ;;
esac
# The frozen tower's fp32 weights go into the device's GEMMs unrounded
# (wf_frozen_weight: fp32 compute for them, as the CPU's sgemm): step 1,
# whose values the two backends share bit for bit here (vlm_bf16 too), gives
# the CPU's loss and norm exactly; a GEMM rounding them to bf16 moved them by
# 1.7e-5 and 1.8e-3.
first_step() {  # first_step JSONL: step 1's loss and gradient norm
  head -n 1 "$1" | grep -Eo '"(loss|grad_norm)": [^,]*'
}
case " ${ROWS:-vlm_fzv_bf16} " in *" vlm_fzv_bf16 "*)
  first_same() { [ -n "$(first_step "$1")" ] && [ "$(first_step "$1")" = "$(first_step "$2")" ]; }
  check "vlm_fzv_bf16: step 1 bit-identical to the CPU's (the frozen weights read unrounded): $(first_step "$WORK/vlm_fzv_bf16.jsonl" | xargs)" \
    first_same "$WORK/vlm_fzv_bf16.jsonl" "$WORK/ref_vlm_fzv_bf16.jsonl" ;;
esac
case " ${ROWS:-vlm_fzl_bf16} " in *" vlm_fzl_bf16 "*)
  check "vlm_fzl_bf16: the frozen language model bit-identical to the CPU's (fp32, untouched)" \
    frozen_same vlm_fzl_bf16 ref_vlm_fzl_bf16 '^model\.language_model\.\|^lm_head\.' ;;
esac

# two ranks over NCCL capture their steps too (graph.c: only comm = "mpi" and
# host work keep steps eager), NCCL operations included
case " ${ROWS:-z3_nccl} " in *" z3_nccl "*)
  check "z3_nccl: the step was captured, NCCL calls and all ($(grep -o 'cuda graph: on[^)]*)' "$WORK/z3_nccl.log" | head -1))" \
    grep -q 'cuda graph: on (captured step 2' "$WORK/z3_nccl.log" ;;
esac

# act16 through NCCL: the 16-bit activations and gradients sent between
# stages (storage floats) inside the captured step
case " ${ROWS:-bf16_pp2_nccl} " in *" bf16_pp2_nccl "*)
  check "bf16_pp2_nccl: the act16 step was captured, sends and receives too" \
    grep -q 'cuda graph: on (captured step 2' "$WORK/bf16_pp2_nccl.log" ;;
esac

# act16 under sequence parallelism through NCCL: the widening, the fp32
# all-gathers and reduce-scatters and the narrowing inside the captured step
case " ${ROWS:-bf16_sp2_nccl} " in *" bf16_sp2_nccl "*)
  check "bf16_sp2_nccl: the act16 tensor-parallel step was captured, its collectives too" \
    grep -q 'cuda graph: on (captured step 2' "$WORK/bf16_sp2_nccl.log" ;;
esac

# act16 under 2BW's two graphs: each converts the weights it reads at their
# first use in the step (a copy holds one version at a time, cast.c)
case " ${ROWS:-bf16_2bw_nccl} " in *" bf16_2bw_nccl "*)
  check "bf16_2bw_nccl: both weight versions' act16 steps captured" bash -c "
    grep -q 'cuda graph: on (captured step 2' '$WORK/bf16_2bw_nccl.log' &&
    grep -q 'cuda graph: on (captured step 3' '$WORK/bf16_2bw_nccl.log'" ;;
esac

# act16's 16-bit weight copies (runtime/cuda/cast.c), kept where the working
# parameters are floats (param_storage = "fp32"): the bf16_pf32 row (2
# microbatches a step) converts each GEMM weight (a linear's, the LM head's
# wte) once a step, not before each of the GEMMs that read it (a linear's
# forward and input gradient of each microbatch; the head's logits and input
# gradient of each chunk), and again after every optimizer step.
# Under 16-bit working parameters (the bf16 row) the GEMMs read the stored
# bits: no conversion at all.
# Eager steps (--no-graph), so that every conversion is the host's decision.
weight16_log() {  # weight16_log LOG STEP: the weights step STEP converts, one a line
  grep -o "weight16: step $2 converts [^ ]*" "$1" | awk '{ print $5 }'
}
case " ${ROWS:-bf16_pf32} " in *" bf16_pf32 "*)
  # the linears' weights (on their call's line) and the LM head's (its
  # chunked call spans lines: the first weight after it)
  gemm_weights=$(awk '/xent_chunked\(/ { head = 1 }
                      (head || /(wf_linear_fwd|wf_linear_gelu_fwd)\(/) && match($0, /w \+ P_[A-Z0-9_]*/) {
                        print substr($0, RSTART, RLENGTH); head = 0 }' "$WORK/bf16_pf32/stage0.cu" | sort -u | wc -l)
  if WEFT_WEIGHT16_LOG=1 timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/bf16_pf32/launch.sh" --steps 2 --no-graph >"$WORK/bf16_w16.log" 2>&1; then
    for step in 1 2; do
      n=$(weight16_log "$WORK/bf16_w16.log" $step | wc -l) u=$(weight16_log "$WORK/bf16_w16.log" $step | sort -u | wc -l)
      check "bf16_pf32: step $step converts each of the $gemm_weights GEMM weights once ($n conversions, $u weights)" \
        test "$n" = "$gemm_weights" -a "$u" = "$gemm_weights" -a "$gemm_weights" -gt 4
    done
  else
    failed=$((failed + 1)); echo "FAIL bf16_pf32 WEFT_WEIGHT16_LOG: did not run: $(tail -n 2 "$WORK/bf16_w16.log")"
  fi ;;
esac
case " ${ROWS:-bf16} " in *" bf16 "*)
  if WEFT_WEIGHT16_LOG=1 timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/bf16/launch.sh" --steps 2 --no-graph >"$WORK/bf16_p16.log" 2>&1; then
    check "bf16 (16-bit parameters): the GEMMs read the stored weights, no conversion" \
      bash -c "! grep -q 'weight16: step' '$WORK/bf16_p16.log'"
  else
    failed=$((failed + 1)); echo "FAIL bf16 WEFT_WEIGHT16_LOG: did not run: $(tail -n 2 "$WORK/bf16_p16.log")"
  fi ;;
esac

# fp16 under a CUDA graph (graph.c): captured at step 2 with the initial scale,
# captured again at step 3 for the doubled one (the row above matched the CPU
# with it), replayed at step 4.  With an overflow injected at step 2 (the
# first replay: skipped, the scale halves, captured again at step 3), four
# steps of the graph run and of --no-graph give the same losses, norms, scales
# and skips, bit for bit (a graph that kept the old scale at step 3 doubles
# its gradients: the norm differs; act16's capture at step 3 that trusted the
# 16-bit weight copies of step 2, whose optimizer step was skipped, converted
# none, and step 4's replay computed on step 3's weights: the loss differs).
fp16_fields() {  # the metrics that must not differ: everything but timings
  grep -Eo '"(loss|grad_norm|loss_scale|skipped|skipped_total)": [^,}]*' "$1"
}
fp16_same() {  # fp16_same A B: 4 steps each, the same fields
  [ "$(grep -c '"skipped": ' "$1")" = 4 ] && [ "$(grep -c '"skipped": ' "$2")" = 4 ] && cmp -s <(fp16_fields "$1") <(fp16_fields "$2")
}
fp16_captures() {  # fp16_captures LOG STEP...: captured at step 2, again at each STEP only
  local log=$1 again
  shift
  grep -q 'cuda graph: on (captured step 2' "$log" || return 1
  again=$(grep -o 'cuda graph: captured again at step [0-9]*' "$log" | grep -o '[0-9]*$' | xargs)
  [ "$again" = "$*" ]
}
case " ${ROWS:-fp16} " in *" fp16 "*)
  check "fp16: captured at step 2, again at step 3 for the doubled loss scale, replayed at step 4" \
    fp16_captures "$WORK/fp16.log" 3
  if timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/fp16/launch.sh" --steps 4 --inject-overflow 2 --metrics "$WORK/fp16_inj.jsonl" \
       >"$WORK/fp16_inj.log" 2>&1 &&
     timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/fp16/launch.sh" --steps 4 --inject-overflow 2 --no-graph \
       --metrics "$WORK/fp16_inj_eager.jsonl" >"$WORK/fp16_inj_eager.log" 2>&1; then
    check "fp16 with an overflow at step 2: skipped, the graph captured again at step 3 for the halved scale" \
      fp16_captures "$WORK/fp16_inj.log" 3
    check "fp16 with an overflow at step 2: step 2 skipped" \
      grep -q '"step": 2, .*"skipped": true' "$WORK/fp16_inj.jsonl"
    check "fp16 with an overflow at step 2: graph replay vs --no-graph (identical loss, norm, scale, skips)" \
      fp16_same "$WORK/fp16_inj.jsonl" "$WORK/fp16_inj_eager.jsonl"
  else
    failed=$((failed + 1)); echo "FAIL fp16 --inject-overflow: did not run: $(tail -n 2 "$WORK/fp16_inj.log")"
  fi ;;
esac

# 2BW over host-staged MPI runs eagerly (graph.c says why)
case " ${ROWS:-bf16_2bw_z1} " in *" bf16_2bw_z1 "*)
  check "bf16_2bw_z1: eager, the log says why" grep -q 'cuda graph: off: comm = mpi' "$WORK/bf16_2bw_z1.log" ;;
esac

# 2BW over NCCL: its stage sends on the pipeline stream, the tied wte and the
# metrics by host MPI beside them (twobw.c: every host access waits for the
# comm streams too).  Its steps are captured, one graph per weight version
# (steps 2 and 3), the tied wte's exchange and the optimizer run after each
# replay (graph.c); the prologue and epilogue are eager.  Five steps (step 4
# replays the graph of step 2) against --no-graph: the same losses, norms and
# final weights, bit for bit; under ZeRO-3 the reduce-scatters of every
# microbatch and the gathers of each version's shard are captured too.
case " ${ROWS:-z3_2bw_nccl} " in *" z3_2bw_nccl "*)
  check "z3_2bw_nccl: ran over NCCL, both weight versions' steps captured" bash -c "
    grep -q 'comm: nccl' '$WORK/z3_2bw_nccl.log' && grep -q 'cuda graph: on (captured step 2' '$WORK/z3_2bw_nccl.log' &&
    grep -q 'cuda graph: on (captured step 3' '$WORK/z3_2bw_nccl.log'"
  if [ -f "$WORK/z3_2bw_nccl.jsonl" ] &&
     timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/z3_2bw_nccl/launch.sh" --no-graph --metrics "$WORK/2bw_eager.jsonl" \
       --save "$WORK/2bw_eager.ckpt" >"$WORK/2bw_eager.log" 2>&1; then
    loss=$(same_field loss "$WORK/2bw_eager.jsonl" "$WORK/z3_2bw_nccl.jsonl" 0) && rc=0 || rc=1
    norm=$(same_field grad_norm "$WORK/2bw_eager.jsonl" "$WORK/z3_2bw_nccl.jsonl" 0) || rc=1
    w=$("$WEFT" ckpt diff "$WORK/2bw_eager.ckpt/model.safetensors" "$WORK/z3_2bw_nccl.ckpt/model.safetensors" \
        --tol 0 --atol 0 | tail -n 1) || rc=1
    check "z3_2bw_nccl: graph replay vs --no-graph (identical): $loss, $norm; $w" test $rc = 0
  else
    failed=$((failed + 1)); echo "FAIL z3_2bw_nccl --no-graph: did not run: $(tail -n 2 "$WORK/2bw_eager.log")"
  fi ;;
esac

# identical A B N: the last N steps of A's metrics against B's, bit for bit
# (loss and gradient norm), and the final weights and optimizer states (2BW:
# the delayed version too) of the checkpoints A.ckpt and B.ckpt
identical() {
  local a=$1 b=$2 n=$3 loss norm w o rc=0
  tail -n "$n" "$WORK/$a.jsonl" >"$WORK/$a.last.jsonl"
  loss=$(same_field loss "$WORK/$a.last.jsonl" "$WORK/$b.jsonl" 0) || rc=1
  norm=$(same_field grad_norm "$WORK/$a.last.jsonl" "$WORK/$b.jsonl" 0) || rc=1
  w=$("$WEFT" ckpt diff "$WORK/$a.ckpt/model.safetensors" "$WORK/$b.ckpt/model.safetensors" \
      --tol 0 --atol 0 | tail -n 1) || rc=1
  o=$("$WEFT" ckpt diff "$WORK/$a.ckpt/optimizer.safetensors" "$WORK/$b.ckpt/optimizer.safetensors" \
      --tol 0 --atol 0 | tail -n 1) || rc=1
  echo "$loss, $norm; weights: $w; optimizer: $o"
  return $rc
}

# 2BW with tp 2 over NCCL (four ranks): the tensor-parallel collectives inside
# both weight versions' graphs (captured at steps 2 and 3).  Against
# --no-graph: identical.  With --ckpt (train.ckpt_every = 3), five steps: the
# pipeline drains for the checkpoint after step 3 and fills again, and step 4
# replays the graph captured at step 2 before the drain; the same five steps.
# Resumed from that checkpoint: the resumed run's first captured graph is the
# other parity's (step 5), and its steps 4 to 6, the final weights and both
# versions in the optimizer file are identical to the straight run's.
case " ${ROWS:-pp2_tp2_2bw_nccl} " in *" pp2_tp2_2bw_nccl "*)
  t=pp2_tp2_2bw_nccl
  check "$t: both weight versions' steps captured" bash -c "
    grep -q 'cuda graph: on (captured step 2' '$WORK/$t.log' && grep -q 'cuda graph: on (captured step 3' '$WORK/$t.log'"
  if [ -f "$WORK/$t.jsonl" ] &&
     timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$t/launch.sh" --no-graph --metrics "$WORK/${t}_eager.jsonl" --save "$WORK/${t}_eager.ckpt" \
       >"$WORK/${t}_eager.log" 2>&1; then
    out=$(identical $t ${t}_eager 6) && rc=0 || rc=1
    check "$t: graph replay vs --no-graph (identical): $out" test $rc = 0
  else
    failed=$((failed + 1)); echo "FAIL $t --no-graph: did not run: $(tail -n 2 "$WORK/${t}_eager.log")"
  fi
  if [ -f "$WORK/$t.jsonl" ] &&
     timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$t/launch.sh" --steps 5 --ckpt "$WORK/${t}_half.ckpt" --metrics "$WORK/${t}_half.jsonl" \
       >"$WORK/${t}_half.log" 2>&1 &&
     timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$t/launch.sh" --resume "$WORK/${t}_half.ckpt" --metrics "$WORK/${t}_resumed.jsonl" \
       --save "$WORK/${t}_resumed.ckpt" >"$WORK/${t}_resumed.log" 2>&1; then
    head -n 5 "$WORK/$t.jsonl" >"$WORK/${t}_first5.jsonl"
    loss=$(same_field loss "$WORK/${t}_first5.jsonl" "$WORK/${t}_half.jsonl" 0) && rc=0 || rc=1
    norm=$(same_field grad_norm "$WORK/${t}_first5.jsonl" "$WORK/${t}_half.jsonl" 0) || rc=1
    check "$t: drained for a checkpoint after step 3, step 2's graph replayed at step 4 (identical): $loss, $norm" \
      bash -c "[ $rc = 0 ] && grep -q 'checkpoint: step 3 saved' '$WORK/${t}_half.log' &&
               ! grep -q 'cuda graph: on (captured step 4' '$WORK/${t}_half.log'"
    check "$t: resumed from that checkpoint, the other parity's graph captured first (step 5)" \
      grep -q 'cuda graph: on (captured step 5' "$WORK/${t}_resumed.log"
    out=$(identical $t ${t}_resumed 3) && rc=0 || rc=1
    check "$t: resumed after step 3 (identical): $out" test $rc = 0
  else
    failed=$((failed + 1)); echo "FAIL $t resumed: did not run: $(tail -n 2 "$WORK/${t}_half.log" "$WORK/${t}_resumed.log")"
  fi ;;
esac

# tp 4 in 16 bits over NCCL: the fp32 sums of four partials inside the
# captured step (the row above matched the CPU's run of the same layout)
case " ${ROWS:-bf16_tp4_nccl} " in *" bf16_tp4_nccl "*)
  check "bf16_tp4_nccl: the act16 step was captured, its four-rank collectives too" \
    grep -q 'cuda graph: on (captured step 2' "$WORK/bf16_tp4_nccl.log" ;;
esac

# fp16 with 2BW: on one rank the delayed update (one graph), captured again
# when the scale doubles at step 3, as the fp16 row; with an overflow at step
# 2, graph and --no-graph agree bit for bit.  Over pp > 1 the compiler refuses
# fp16 (no shared overflow verdict between asynchronous stages), saying why.
case " ${ROWS:-fp16_2bw} " in *" fp16_2bw "*)
  t=fp16_2bw
  check "$t: captured at step 2, again at step 3 for the doubled loss scale" fp16_captures "$WORK/$t.log" 3
  if timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$t/launch.sh" --steps 4 --inject-overflow 2 --metrics "$WORK/${t}_inj.jsonl" \
       >"$WORK/${t}_inj.log" 2>&1 &&
     timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$t/launch.sh" --steps 4 --inject-overflow 2 --no-graph \
       --metrics "$WORK/${t}_inj_eager.jsonl" >"$WORK/${t}_inj_eager.log" 2>&1; then
    check "$t with an overflow at step 2: step 2 skipped, captured again at step 3" bash -c "
      grep -q '\"step\": 2, .*\"skipped\": true' '$WORK/${t}_inj.jsonl' &&
      grep -q 'cuda graph: captured again at step 3' '$WORK/${t}_inj.log'"
    check "$t with an overflow at step 2: graph replay vs --no-graph (identical loss, norm, scale, skips)" \
      fp16_same "$WORK/${t}_inj.jsonl" "$WORK/${t}_inj_eager.jsonl"
  else
    failed=$((failed + 1)); echo "FAIL $t --inject-overflow: did not run: $(tail -n 2 "$WORK/${t}_inj.log")"
  fi
  # resumed after step 2: the loss scale and its counters restored, step 3
  # eager (the scale doubles), step 4 captured with the doubled scale
  if timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$t/launch.sh" --steps 2 --save "$WORK/${t}_half.ckpt" >"$WORK/${t}_half.log" 2>&1 &&
     timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/$t/launch.sh" --resume "$WORK/${t}_half.ckpt" --metrics "$WORK/${t}_resumed.jsonl" \
       --save "$WORK/${t}_resumed.ckpt" >"$WORK/${t}_resumed.log" 2>&1; then
    out=$(identical $t ${t}_resumed 2) && rc=0 || rc=1
    fp16_same_fields() { cmp -s <(fp16_fields "$1") <(fp16_fields "$2"); }
    fp16_same_fields "$WORK/$t.last.jsonl" "$WORK/${t}_resumed.jsonl" || rc=1
    grep -q 'cuda graph: on (captured step 4' "$WORK/${t}_resumed.log" || rc=1
    check "$t: resumed after step 2, captured at step 4 (identical, loss scales too): $out" test $rc = 0
  else
    failed=$((failed + 1)); echo "FAIL $t resumed: did not run: $(tail -n 2 "$WORK/${t}_half.log" "$WORK/${t}_resumed.log")"
  fi
  check "fp16 with pipedream-2bw over pp 2: refused, saying why" bash -c "
    ! '$WEFT' compile plans/tiny.lua -o '$WORK/fp16_2bw_pp2' --backend cuda ${small[*]} --set mesh.pp=2 \
        --set batch.micro=1 --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0 ${fp16_scale[*]} \
        2>'$WORK/fp16_2bw_pp2.log' &&
    grep -q 'plan.precision: \"fp16\" with pipedream-2bw over pp > 1: skipping a step on an overflow' \
      '$WORK/fp16_2bw_pp2.log'" ;;
esac

# the one-rank row replayed a captured graph; eager steps must give the same losses
# 16-bit working parameters and gradients change no number on CUDA either:
# every kernel reads the values the float arena held (rounded floats widened
# exactly; the GEMMs the stored bits, which the copies held), AdamW rounds
# the same master from the same gradients, the norm sums the same values in
# the same order: the bf16 row against bf16_pf32 (param_storage = "fp32",
# its GEMMs on 16-bit copies; WEFT_GRAD16=0, its gradients rounded floats),
# bit for bit, losses, norms and final weights and moments.
case " ${ROWS:-bf16 bf16_pf32} " in *" bf16 "*) case " ${ROWS:-bf16 bf16_pf32} " in *" bf16_pf32 "*)
  out=$(identical bf16 bf16_pf32 4) && rc=0 || rc=1
  check "bf16 (16-bit parameters and gradients) vs bf16_pf32 (float parameters, 16-bit copies, float gradients), identical: $out" test $rc = 0 ;;
  esac ;;
esac
case " ${ROWS:-one} " in *" one "*) ;; *) echo "$passed passed, $failed failed"; [ $failed = 0 ]; exit ;; esac
if [ -f "$WORK/one.jsonl" ] &&
   timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/one/launch.sh" --no-graph --metrics "$WORK/one_eager.jsonl" >"$WORK/one_eager.log" 2>&1; then
  check "one: the step was captured ($(grep -o 'cuda graph: on[^)]*)' "$WORK/one.log"))" \
    grep -q 'cuda graph: on (captured step 2' "$WORK/one.log"
  same=$(same_field loss "$WORK/one.jsonl" "$WORK/one_eager.jsonl" 0) && rc=0 || rc=1
  check "one: graph replay vs --no-graph (identical): $same" test $rc = 0
else
  failed=$((failed + 1)); echo "FAIL one --no-graph: did not run: $(tail -n 2 "$WORK/one_eager.log")"
fi

# a checkpoint written by the CUDA program after step 2 and resumed (the host
# loads the arenas, the graph is captured again): the same last two steps, bit
# for bit, and the same final weights
if timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/one/launch.sh" --steps 2 --save "$WORK/half.ckpt" >"$WORK/half.log" 2>&1 &&
   timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/one/launch.sh" --resume "$WORK/half.ckpt" --metrics "$WORK/resumed.jsonl" \
     --save "$WORK/resumed.ckpt" >"$WORK/resumed.log" 2>&1; then
  tail -n 2 "$WORK/one.jsonl" >"$WORK/one_last2.jsonl"
  same=$(same_field loss "$WORK/one_last2.jsonl" "$WORK/resumed.jsonl" 0) && rc=0 || rc=1
  w=$("$WEFT" ckpt diff "$WORK/one.ckpt/model.safetensors" "$WORK/resumed.ckpt/model.safetensors" \
      --tol 0 --atol 0 | tail -n 1) || rc=1
  check "one: resumed after step 2 (identical): $same; $w" test $rc = 0
else
  failed=$((failed + 1)); echo "FAIL one resumed: did not run: $(tail -n 2 "$WORK/half.log" "$WORK/resumed.log")"
fi

# a broken kernel must show: every warp reduction's shuffle returns the lane's own value
if [ -x "$WORK/one/build/stage0" ]; then
  WF_EMU_FAULT=shfl_down timeout $((120 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/one/launch.sh" --metrics "$WORK/fault.jsonl" \
    --save "$WORK/fault.ckpt" >"$WORK/fault.log" 2>&1 || true
  if out=$(compare fault ref fp32 2>&1); then
    failed=$((failed + 1)); echo "FAIL WF_EMU_FAULT=shfl_down went unnoticed: $out"
  else
    passed=$((passed + 1)); echo "ok   WF_EMU_FAULT=shfl_down fails the fp32 row: $out"
  fi
fi
# comm = "nccl", two ranks on one emulated device: refused, as on one GPU
if build_emu nccl plans/tiny.lua --set mesh.dp=2 --set batch.micro=1; then
  WF_EMU_DEVICES=1 timeout $((60 * ${WEFT_TIMEOUT_SCALE:-1})) "$WORK/nccl/launch.sh" --steps 1 >"$WORK/nccl.log" 2>&1 || true
  check "comm = nccl, two ranks on one emulated device: refused, naming comm = \"mpi\"" \
    grep -Eq "rank [01]: ncclCommInitRank failed .*both use GPU 0 .*compile with comm = \"mpi\"" "$WORK/nccl.log"
else
  failed=$((failed + 1)); echo "FAIL nccl: does not build on the emulator"
fi
echo "$passed passed, $failed failed"
[ $failed = 0 ]
