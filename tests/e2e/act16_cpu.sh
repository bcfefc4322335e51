#!/usr/bin/env bash
# 16-bit activation storage on the CPU backend (compiler/act16.c,
# runtime/cpu/stage16.h).  Under bf16 / fp16 a CPU program stores activations
# and their gradients as 16-bit values, two a float; its float kernels run on
# staged floats and round what they write back.  Every value it stores is
# one the float-storage program (WEFT_ACT16=0: float arenas, a rounding call
# after each kernel) rounds to the same 16-bit value, so the two must agree
# bit for bit: the same losses and gradient norms at every step (compared as
# printed, 9 significant digits) and byte-identical final checkpoints
# (weights, fp32 masters, AdamW moments), with no tolerance.  Layouts: GPT-2
# (tiny), LLaMA (llama_tiny: RMSNorm, RoPE, GQA, SwiGLU), and tp 2 x pp 2
# (tensor-parallel collectives, vocabulary-parallel loss, pipeline messages;
# with sequence parallelism, and with fp32 tensor-parallel sums), and
# weft.vlm (plans/vlm_*.lua on vlm-synth records: the patch embedding, the
# encoder's prefix attention and the image hand-off; single-rank in bf16, and
# tp 2 with sequence parallelism in fp16, their kernels on each rank's rows).  Also:
# `weft check` halves the activation gradients and about halves the
# activations (their saved statistics and the LM head's dlogits stay float),
# and the run allocates exactly what the compiler planned.
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq 24 --count 64 --seed 5 >/dev/null

# bytes NAME FILE: a row of `weft check`'s memory table in bytes (stage 0)
bytes() {
  awk -v k="$1" 'substr($0, 3, 12) == sprintf("%-12s", k) {
      split(substr($0, 15), f, " "); u = f[2]
      m = u == "B" ? 1 : u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 0
      print f[1] * m; exit }' "$2"
}
ratio() { awk -v a="$1" -v b="$2" -v lo="$3" -v hi="$4" 'BEGIN { exit !(b > 0 && a / b >= lo && a / b <= hi) }'; }
# the loss and gradient norm of every step, as the metrics print them
steps_of() { grep -o '"step": [0-9]*, "loss": [^,]*, "lr": [^,]*, "grad_norm": [^,]*' "$1"; }

# programs_are DIR FN: every stage program of DIR-16 stores 16 bits and
# plans its staging, rounding no activation with FN; DIR-f32's are float
# storage with FN after its kernels
programs_are() {
  local f
  for f in "$1"-16/stage*.c; do
    grep -q '\.act16 = 1,' "$f" && grep -q '\.stage16_numel = [1-9][0-9]*L,' "$f" && ! grep -q "$2(c, [ad] +" "$f" || return 1
  done
  for f in "$1"-f32/stage*.c; do
    grep -q '\.act16 = 0,' "$f" && ! grep -q 'stage16_numel' "$f" && grep -q "$2(c, a +" "$f" || return 1
  done
}

STEPS=10
one=(--set mesh.dp=1 --set batch.micro=4 --set batch.global=4)
tp2pp2=(--set mesh.dp=1 --set mesh.tp=2 --set mesh.pp=2 --set batch.micro=2 --set batch.global=8)
# name plan precision overrides...
layouts=(
  "tiny-bf16 tiny bf16 ${one[*]}"
  "tiny-fp16 tiny fp16 ${one[*]}"
  "llama-bf16 llama_tiny bf16 ${one[*]}"
  "tp2pp2-bf16-sp tiny bf16 ${tp2pp2[*]} --set mesh.sp=true"
  "tp2pp2-fp16-tpfp32 tiny fp16 ${tp2pp2[*]} --set tp_comm=fp32"
  "vlm-bf16 vlm_llama bf16 ${one[*]}"
  "vlm-tp2-sp-fp16 vlm_tiny fp16 --set mesh.dp=1 --set mesh.tp=2 --set mesh.sp=true --set batch.micro=2 --set batch.global=4"
)
for row in "${layouts[@]}"; do
  read -r name plan pr sets <<<"$row"
  case " ${ONLY:-$name} " in *" $name "*) ;; *) continue ;; esac  # ONLY="tiny-bf16 ...": those rows
  # shellcheck disable=SC2206
  data=$DATA
  case $plan in vlm_*) data=$WORK/vlm.bin ;; esac
  args=(plans/$plan.lua --set precision=$pr --set data.train="$data" --set train.steps=$STEPS $sets)
  WEFT_ACT16=0 build_plan "$name-f32" "${args[@]}"
  build_plan "$name-16" "${args[@]}"
  check "$name: 16-bit storage (act16 = 1, float staging planned, no rounding call on activations or their gradients); WEFT_ACT16=0 floats" \
    programs_are "$WORK/$name" "wf_to_$pr"
  run_plan "$name-f32" --metrics "$WORK/$name-f32.jsonl" --save "$WORK/$name-f32.ckpt" >/dev/null
  run_plan "$name-16" --metrics "$WORK/$name-16.jsonl" --save "$WORK/$name-16.ckpt" >/dev/null
  steps_of "$WORK/$name-f32.jsonl" >"$WORK/$name-f32.steps"
  steps_of "$WORK/$name-16.jsonl" >"$WORK/$name-16.steps"
  check "$name: $STEPS steps, the same losses and gradient norms as float storage (last: $(tail -1 "$WORK/$name-16.steps" | cut -d, -f2))" \
    bash -c "[ \$(wc -l <'$WORK/$name-16.steps') = $STEPS ] && cmp -s '$WORK/$name-f32.steps' '$WORK/$name-16.steps'"
  check "$name: byte-identical final checkpoints (weights, masters, moments)" \
    bash -c "ls '$WORK/$name-16.ckpt' | grep -q safetensors && for f in \$(ls '$WORK/$name-f32.ckpt'); do
               cmp -s '$WORK/$name-f32.ckpt/'\$f '$WORK/$name-16.ckpt/'\$f || exit 1; done"
  m=$(grep -o '"mem_bytes": [0-9]*, "mem_planned_bytes": [0-9]*' "$WORK/$name-16.jsonl" | tail -1)
  check "$name: allocated = planned ($m)" \
    awk -v m="$m" 'BEGIN { split(m, f, /[ ,]+/); exit !(f[2] > 0 && f[2] == f[4]) }'
  # weft check of the same plan, both storages
  WEFT_ACT16=0 "$WEFT" check "${args[@]}" >"$WORK/$name-f32.check"
  "$WEFT" check "${args[@]}" >"$WORK/$name-16.check"
  a32=$(bytes activations "$WORK/$name-f32.check") a16=$(bytes activations "$WORK/$name-16.check")
  d32=$(bytes "act. grads" "$WORK/$name-f32.check") d16=$(bytes "act. grads" "$WORK/$name-16.check")
  check "$name: check: activations $a16 of float storage's $a32 bytes (about half)" ratio "$a16" "$a32" 0.45 0.6
  check "$name: check: activation gradients $d16 of float storage's $d32 bytes (half)" ratio "$d16" "$d32" 0.45 0.55
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
