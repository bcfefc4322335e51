#!/usr/bin/env bash
# hf_llava.sh: a weft.vlm checkpoint in Hugging Face transformers.  Trains
# plans/vlm_llama.lua (a ViT, LLaVA's projector, a LLaMA) and
# plans/vlm_tiny.lua (the same with a GPT-2) on `weft data vlm-synth`
# records, saves at steps 0 and 20, and loads each checkpoint with
# LlavaForConditionalGeneration.from_pretrained (bench/hf_llava.py: no
# missing, unexpected or mismatched weight allowed).  The data file holds
# exactly one global batch, so the loss Weft logs for the step after the
# checkpoint is the mean over all of its records' loss positions, which
# transformers then computes from the same images and tokens, in float64.
#
# Tolerance: Weft computes in fp32, the reference in float64, so their
# difference is Weft's rounding alone.  A logit passes through at most 2 + 2
# + 2 layers (encoder, projector, decoder), each a few sums of K <= 64 terms
# (the widest: the 64-wide MLPs); rounding errors of unit u = 2^-24 that are
# independent grow as sqrt(n) (Higham's probabilistic bound): about
# sqrt(6 * 4 * 64) u = 39 u = 2.3e-6 of a logit's scale, which the loss, a
# mean over 300-odd positions, inherits at most; the check is 1e-5 relative,
# 4x that.  Mistakes it catches, measured on the step-0 checkpoint: q_proj
# and k_proj swapped in one encoder layer move the loss by 2.9e-4, the
# features read from layer -2 instead of -1 by 4.1e-3.
#
# A GPT-2's position embeddings are added after the image rows are merged
# in (Graph:position_add), as transformers' GPT-2 inside LLaVA adds them to
# every row; replacing whole rows (token + position) instead put the two 4e-2
# apart at step 0.
#
# Needs a python with torch, transformers and safetensors (PYTHON=...; e.g.
# python3 -m venv V && V/bin/pip install torch transformers safetensors).
# Run from the repository root after scripts/build.sh.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
PY=${PYTHON:-python3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMPI_MCA_rmaps_base_oversubscribe=1
N=32 SEQ=24 TOL=1e-5
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq $SEQ --count $N --seed 3 >/dev/null
fail=0
printf "%-10s %5s %20s %20s %9s %9s\n" plan step weft_loss hf_loss rel rel_desc
for plan in vlm_llama vlm_tiny; do
  "$WEFT" compile plans/$plan.lua -o "$WORK/$plan" --set data.train="$WORK/vlm.bin" --set batch.global=$N \
    --set batch.micro=$N >/dev/null
  cmake -S "$WORK/$plan" -B "$WORK/$plan/build" >/dev/null && cmake --build "$WORK/$plan/build" >/dev/null
  for step in 0 20; do
    "$WORK/$plan/launch.sh" --quiet --steps $step --save "$WORK/$plan.$step" >/dev/null
    "$WORK/$plan/launch.sh" --quiet --steps $((step + 1)) --resume "$WORK/$plan.$step" \
      --metrics "$WORK/$plan.$step.jsonl" >/dev/null
    line=$(grep "\"step\": $((step + 1))," "$WORK/$plan.$step.jsonl")
    wl=$(sed 's/.*"loss": \([^,]*\),.*/\1/' <<<"$line")
    wd=$(sed 's/.*"loss_descriptive": \([^,}]*\).*/\1/' <<<"$line")
    out=$("$PY" bench/hf_llava.py "$WORK/$plan.$step" "$WORK/vlm.bin")
    [ "$plan.$step" != vlm_llama.0 ] || sed -n 1,2p <<<"$out"
    hl=$(sed -n 's/^loss //p' <<<"$out")
    hd=$(sed -n 's/^loss_descriptive //p' <<<"$out")
    read -r rel reld ok < <(awk -v a="$wl" -v b="$hl" -v c="$wd" -v d="$hd" -v t=$TOL 'BEGIN {
      r = (a - b) / b; r = r < 0 ? -r : r; s = (c - d) / d; s = s < 0 ? -s : s
      printf "%.2e %.2e %d\n", r, s, r <= t && s <= t }')
    printf "%-10s %5d %20s %20s %9s %9s\n" $plan $step "$wl" "$hl" "$rel" "$reld"
    [ "$ok" = 1 ] || { echo "  over $TOL"; fail=1; }
  done
done
exit $fail
