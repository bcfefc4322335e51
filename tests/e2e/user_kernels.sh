#!/usr/bin/env bash
# User kernels end to end (README.md, "User kernels"): a GPT-2 whose MLP
# activation is a user kernel (user_kernels/kernels/gelu.c, the built-in tanh
# GELU's formula) and a LLaMA whose MLP gate is an elementwise2 kernel
# (kernels/swiglu.c, the built-in SwiGLU's) train as the same models with the
# built-in ops, on one rank and under tp 2 with sequence parallelism and pp 2
# (4 ranks); plans/tiny_swish.lua (swish) compiles, builds and trains; the
# generated C and CUDA are byte-identical across compiles (the CUDA
# program's build and run: user_kernels_cuda.sh).
#
# Tolerance: none.  The kernels evaluate the built-in kernels' float
# expressions in the same order (gelu_value.h, llama.c), per value, and
# every other op and reduction is the same call on the same data, so each
# logged loss and gradient norm must be equal to the built-in run's, bit
# for bit.  (A compiler that contracted a * b + c into fused multiply-adds
# in the generated file but not in the runtime could move a value by an ulp;
# the CPU build makes none.)  A wrong kernel call fails it: a swapped pair
# of gate gradients, or the rows of the whole batch under sp.
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
D=tests/e2e/user_kernels
# (one rank is the equivalence test's business: a layout's losses equal the
# single rank's; here each layout runs 4 ranks, as few builds as possible)
layouts=(
  "tpsp  --set mesh.tp=2 --set mesh.sp=true --set mesh.pp=2"
)
for model in gpt2 llama; do
  for row in "${layouts[@]}"; do
    read -r name sets <<<"$row"
    for v in kernel builtin; do
      # shellcheck disable=SC2086
      build_plan "${model}_${v}_$name" "$D/${model}_$v.lua" --set data.train="$DATA" $sets
      run_plan "${model}_${v}_$name" --metrics "$WORK/${model}_${v}_$name.jsonl" >/dev/null
    done
    a=$WORK/${model}_kernel_$name.jsonl b=$WORK/${model}_builtin_$name.jsonl
    for field in loss grad_norm; do
      if r=$(same_field $field "$b" "$a" 0); then ok=true; else ok=false; fi
      check "$model $name: the kernel's $field equals the built-in op's ($r)" $ok
    done
  done
done

# plans/tiny_swish.lua (made smaller): compiles, builds, 10 steps with a falling loss
build_plan swish plans/tiny_swish.lua --set data.train="$DATA" --set train.steps=10 --set train.log_every=1 \
  --set model.layers=2 --set model.hidden=64 --set model.seq=64
run_plan swish --metrics "$WORK/swish.jsonl" >/dev/null
first=$(head -n 1 "$WORK/swish.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(tail -n 1 "$WORK/swish.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
check "tiny_swish trains: loss $first -> $last" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a) }'

# the generated programs are byte-identical across compiles
for i in 1 2; do
  "$WEFT" compile "$D/llama_kernel.lua" -o "$WORK/same$i" --set mesh.tp=2 --set mesh.sp=true --set mesh.pp=2 2>/dev/null
done
check "generated C byte-identical across compiles" cmp "$WORK/same1/stage0.c" "$WORK/same2/stage0.c"
check "... stage 1 too" cmp "$WORK/same1/stage1.c" "$WORK/same2/stage1.c"
check "the kernel's functions are in the program as static inline" \
  grep -q 'static inline WF_KERNEL_FN float swiglu_fwd(float g, float u)' "$WORK/same1/stage0.c"

# the CUDA program too (its build and run: user_kernels_cuda.sh)
for i in 1 2; do
  "$WEFT" compile "$D/llama_kernel.lua" -o "$WORK/cuda$i" --backend cuda 2>/dev/null
done
check "generated CUDA byte-identical across compiles" cmp "$WORK/cuda1/stage0.cu" "$WORK/cuda2/stage0.cu"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
