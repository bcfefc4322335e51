#!/usr/bin/env bash
# VLM layout invariance: plans/vlm_tiny.lua (ViT encoder, projector, GPT-2)
# on `weft data vlm-synth` records under data parallelism (dp 2, with
# gradient accumulation), ZeRO-2 and ZeRO-3, tensor parallelism (tp 2: the
# encoder's heads and MLP split as the LLM's) and pipeline parallelism (pp 2,
# 1F1B, the encoder and projector on stage 0) gives the single-rank loss and
# gradient norm at every step for 10 steps and the single-rank final weights.
# Every layout reads the same global batch (sampling is a pure function of
# the global sample index) and scales the loss by the same count of loss
# positions (runtime/common/batch_vlm.c).
#
# Tolerances as tests/e2e/equivalence.sh derives them (fp32 reduction-order
# noise): losses within 2e-6 relative, gradient norms within 1e-6; weights
# per tensor within T K u of the updates (lib.sh's reduction_noise, K = 16 x
# 24 tokens a step, T = 10 steps) and per element within what AdamW can move
# them (lib.sh's adam_reach).
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
STEPS=10 LOSS_TOL=2e-6 NORM_TOL=1e-6 GLOBAL=16 SEQ=24
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq $SEQ --count 512 --seed 5 >/dev/null
common=(--set data.train="$WORK/vlm.bin" --set train.steps=$STEPS --set batch.global=$GLOBAL)
# name     dp tp pp micro zero schedule
layouts=(
  "ref       1  1  1  16   0    1f1b"
  "dp2       2  1  1   8   0    1f1b"
  "dp2_acc2  2  1  1   4   0    1f1b"
  "z2_dp2    2  1  1   8   2    1f1b"
  "z3_dp2    2  1  1   8   3    1f1b"
  "tp2       1  2  1  16   0    1f1b"
  "pp2       1  1  2   4   0    1f1b"
  "pp2_gpipe 1  1  2   4   0    gpipe"
)
for row in "${layouts[@]}"; do
  read -r name dp tp pp micro zero sched <<<"$row"
  if [ -n "${LAYOUTS:-}" ] && [ $name != ref ] && [[ " $LAYOUTS " != *" $name "* ]]; then continue; fi
  build_plan $name plans/vlm_tiny.lua "${common[@]}" --set mesh.dp=$dp --set mesh.tp=$tp --set mesh.pp=$pp \
    --set batch.micro=$micro --set zero=$zero --set pipeline.schedule=$sched \
    --set cluster.devices_per_node=$((dp * tp * pp))
  run_plan $name --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" >/dev/null
  if [ $name = ref ]; then run_plan ref --steps 0 --save "$WORK/ref.init" >/dev/null; continue; fi
  what="dp $dp tp $tp pp $pp $sched, micro $micro, ZeRO-$zero"
  loss_msg=$(same_field loss "$WORK/ref.jsonl" "$WORK/$name.jsonl" $LOSS_TOL) && ok=1 || ok=0
  norm_msg=$(same_field grad_norm "$WORK/ref.jsonl" "$WORK/$name.jsonl" $NORM_TOL) || ok=0
  w_msg=$("$WEFT" ckpt diff "$WORK/ref.ckpt/model.safetensors" "$WORK/$name.ckpt/model.safetensors" \
          --norm-tol "$(reduction_noise $STEPS $((GLOBAL * SEQ)))" --from "$WORK/ref.init/model.safetensors" \
          --bound "$(adam_reach "$WORK/ref/stage0.c" "$WORK/ref.jsonl")" | tail -n 1) || ok=0
  check "$name ($what): $loss_msg, $norm_msg; $w_msg" test $ok = 1
done
# the encoder and projector run on the first pipeline stage only
check "pp2: the patch embedding and projector on stage 0, not stage 1" \
  eval 'grep -q wf_patch_embed_fwd "$WORK/pp2/stage0.c" && grep -q MULTI_MODAL_PROJECTOR "$WORK/pp2/stage0.c" &&
        ! grep -q "wf_patch_embed_fwd\|MULTI_MODAL_PROJECTOR" "$WORK/pp2/stage1.c"'
echo "$passed passed, $failed failed"
[ $failed = 0 ]
