#!/usr/bin/env bash
# hf_gpt2.sh: a pipelined (pp 2) Weft checkpoint is a Hugging Face sharded
# checkpoint that transformers loads as it is.  Trains plans/tiny.lua (GPT-2,
# 4 layers) under pp 2 for 20 steps, saves (one shard a stage and
# model.safetensors.index.json), resumes for one more step to log the loss
# of step 21 on the saved weights, and loads the folder with
# GPT2LMHeadModel.from_pretrained (bench/hf_gpt2.py: no missing, unexpected
# or mismatched weight allowed), which computes the same step's loss on the
# same batch in float64.  The same for the step-0 checkpoint.
#
# Tolerance: Weft computes in fp32, the reference in float64, so their
# difference is Weft's rounding alone.  A logit passes through 4 layers,
# each a few sums of K <= 512 terms (the MLP's 4 x 128), and the head (K =
# 128); rounding errors of unit u = 2^-24 that are independent grow as
# sqrt(n) (Higham's probabilistic bound): about sqrt(4 * 3 * 512 + 128) u =
# 79 u = 4.7e-6 of a logit's scale, which the loss, a mean over 2048
# positions, inherits at most; the check is 2e-5 relative, 4x that.
#
# Needs torch, transformers and safetensors: PYTHON=... names a python that
# has them; else a venv in /tmp/weft-hf-venv is made (CPU wheels; minutes).
# Run from the repository root after scripts/build.sh.
set -euo pipefail
WEFT=${WEFT:-build/compiler/weft}
if [ -z "${PYTHON:-}" ]; then
  PYTHON=/tmp/weft-hf-venv/bin/python
  if ! "$PYTHON" -c 'import torch, transformers, safetensors' 2>/dev/null; then
    python3 -m venv /tmp/weft-hf-venv
    /tmp/weft-hf-venv/bin/pip install -q torch transformers safetensors numpy
  fi
fi
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 OMPI_MCA_rmaps_base_oversubscribe=1
export HF_HUB_DISABLE_PROGRESS_BARS=1 TRANSFORMERS_VERBOSITY=error
GLOBAL=16 SEED=1337 TOL=2e-5
"$WEFT" data synth -o "$WORK/synth.bin" --tokens 200000 --vocab 256 --branch 4 --seed 7 >/dev/null
"$WEFT" compile plans/tiny.lua -o "$WORK/pp2" --set data.train="$WORK/synth.bin" --set mesh.dp=1 \
  --set mesh.pp=2 --set batch.global=$GLOBAL --set train.seed=$SEED >/dev/null 2>&1
cmake -S "$WORK/pp2" -B "$WORK/pp2/build" >/dev/null && cmake --build "$WORK/pp2/build" >/dev/null
fail=0
printf "%5s %-44s %20s %20s %9s\n" step files weft_loss hf_loss rel
for step in 0 20; do
  "$WORK/pp2/launch.sh" --quiet --steps $step --save "$WORK/ck.$step" >/dev/null
  "$WORK/pp2/launch.sh" --quiet --steps $((step + 1)) --resume "$WORK/ck.$step" --metrics "$WORK/m.$step.jsonl" >/dev/null
  wl=$(grep "\"step\": $((step + 1))," "$WORK/m.$step.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
  out=$("$PYTHON" bench/hf_gpt2.py "$WORK/ck.$step" "$WORK/synth.bin" $SEED $step $GLOBAL)
  [ $step != 0 ] || sed -n 1,2p <<<"$out"
  hl=$(sed -n 's/^loss //p' <<<"$out")
  read -r rel ok < <(awk -v a="$wl" -v b="$hl" -v t=$TOL 'BEGIN { r = (a - b) / b; r = r < 0 ? -r : r; printf "%.2e %d\n", r, r <= t }')
  printf "%5d %-44s %20s %20s %9s\n" $step "$(cd "$WORK/ck.$step" && ls model* | tr '\n' ' ')" "$wl" "$hl" "$rel"
  [ "$ok" = 1 ] || { echo "  over $TOL"; fail=1; }
done
exit $fail
