#!/usr/bin/env bash
# VLM layout invariance: plans/vlm_tiny.lua (ViT encoder, projector, GPT-2)
# on `weft data vlm-synth` records under data parallelism (dp 2, with
# gradient accumulation), ZeRO-1, -2 and -3, tensor parallelism (tp 2: the
# encoder's heads and MLP split as the LLM's; also with sequence parallelism,
# the encoder's stream split as the LLM's), pipeline parallelism (pp 2,
# 1F1B and GPipe; interleaved with a 4-layer language model; the encoder and
# projector on stage 0), PipeDream-2BW (pp 2, dp 2 x pp 2, against the
# single-rank one-step-late run), dp x tp x pp = 2 x 2 x 2 (with and without
# sp), and full and selective activation recompute gives the single-rank
# loss, descriptive loss and gradient norm at every step for 10 steps and the
# single-rank final weights.  `vlm_equivalence.sh frozen16` runs the other
# table: weft.vlm's freeze (vision: dp 2 ZeRO-1, tp 2 with sp, pp 2; llm:
# dp 2 ZeRO-2, tp 2, pp 2; both: dp 2 ZeRO-3, whose frozen parameters stay
# whole outside its shards, vision also under bf16, and dp 2 x pp 2 ZeRO-3:
# freeze vision leaves stage 0 its projector and embeddings to shard, freeze
# llm leaves stage 1 no trainable parameter at all) against the single-rank
# frozen run, the frozen weights bit-identical to their initial values (also
# under bf16, against the fp32 initial weights), a resume after step 5
# bit-identical (the single-rank runs and ZeRO-3's); and bf16
# (dp 2, tp 2) and fp16 (dp 2) against the single-rank run in the same
# precision.
# Every layout reads the same global batch (sampling is a pure function of
# the global sample index) and scales the loss by the same count of loss
# positions (runtime/common/batch_vlm.c).
#
# Tolerances (fp32 reduction-order noise, u = 2^-24, K = 16 x 24 = 384
# tokens a step, T = 10 steps):
#   - losses within 2e-6 relative, as tests/e2e/equivalence.sh;
#   - gradient norms: every gradient element is a K-term sum, which another
#     order rounds by (K - 1) u at most in one step; over T steps, each
#     step's difference feeding the next step's weights, independent
#     roundings (Higham and Mary's probabilistic analysis) give about
#     T sqrt(K / 3) u.  The norm weighs the elements' relative errors by
#     g_i^2 / ||g||^2, so it is off by at most the larger of the two:
#     max(K u, T sqrt(K / 3) u) = max(2.3e-5, 6.7e-6) = 2.3e-5 here.  (The
#     interleaved row, whose stages sum their chunks' gradients in another
#     order, has reached 1.0e-6; a missing or doubled gradient sum moves the
#     norm by 1e-3 and more.)
#   - weights per tensor within T K u of the updates (lib.sh's
#     reduction_noise) and per element within what AdamW can move them
#     (lib.sh's adam_reach);
#   - bf16 / fp16 rows: lib.sh's storage_noise (below).
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
STEPS=10 LOSS_TOL=2e-6 GLOBAL=16 SEQ=24
NORM_TOL=$(awk -v t=$STEPS -v k=$((GLOBAL * SEQ)) 'BEGIN { u = 2 ^ -24; a = k * u; b = t * sqrt(k / 3) * u
                                                           printf "%.2e", (a > b ? a : b) }')
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq $SEQ --count 512 --seed 5 >/dev/null
# vlm-synth's captions all have 6 words, so every batch has as many loss
# positions; PipeDream-2BW's rows read captions of 1 to 8 ids instead
# (`weft data vlm` on PNGs made here), so that its two batches in flight each
# need their own loss scale (1 / their loss positions)
mkdir -p "$WORK/varied"
python3 - "$WORK/varied" <<'PY'
import json, random, struct, sys, zlib
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d))
rng, d, lines = random.Random(7), sys.argv[1], []
for i in range(24):
    px = [bytes(rng.randrange(256) for _ in range(3)) for _ in range(4)]
    raw = b"".join(b"\0" + b"".join(px[(x // 16) + 2 * (y // 16)] for x in range(32)) for y in range(32))
    open("%s/%d.png" % (d, i), "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 32, 32, 8, 2, 0, 0, 0))
                                       + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
    lines.append(json.dumps({"image": "%d.png" % i, "ids": [rng.randrange(14) for _ in range(1 + i % 8)]}))
open(d + "/captions.jsonl", "w").write("\n".join(lines) + "\n")
PY
"$WEFT" data vlm "$WORK/varied" "$WORK/varied/captions.jsonl" -o "$WORK/varied.bin" --image 32 --patch 8 --seq $SEQ \
  --vocab 16 --image-token 14 --pad-token 15 >/dev/null
# GPT-2's init_std 0.02, as tests/e2e/equivalence.sh runs: the bounds above
# take the rounding differences as not amplified, which holds near this
# init and not at vlm_tiny's 0.1 (whose larger attention logits amplify a
# 1e-7 difference to 1e-5 of the gradient norm within 10 steps)
common=(--set data.train="$WORK/vlm.bin" --set train.steps=$STEPS --set batch.global=$GLOBAL
        --set model.vision.init_std=0.02 --set model.llm.init_std=0.02)
# A reference runs on one rank (ref_l4: a 4-layer language model, for the
# interleaved schedule's 4 chunks); every other row must match its reference.
# name       ref     L dp tp pp micro zero schedule    v recompute [--set k=v ...]
layouts=(
  "ref         ref     2  1  1  1  16   0    1f1b        1 none"
  "dp2         ref     2  2  1  1   8   0    1f1b        1 none"
  "dp2_acc2    ref     2  2  1  1   4   0    1f1b        1 none"
  "z1_dp2      ref     2  2  1  1   8   1    1f1b        1 none"
  "z2_dp2      ref     2  2  1  1   8   2    1f1b        1 none"
  "z3_dp2      ref     2  2  1  1   8   3    1f1b        1 none"
  "tp2         ref     2  1  2  1  16   0    1f1b        1 none"
  "tp2_sp      ref     2  1  2  1  16   0    1f1b        1 none      mesh.sp=true"
  "pp2         ref     2  1  1  2   4   0    1f1b        1 none"
  "pp2_gpipe   ref     2  1  1  2   4   0    gpipe       1 none"
  "rc_dp2      ref     2  2  1  1   8   0    1f1b        1 full"
  "rs_tp2      ref     2  1  2  1  16   0    1f1b        1 selective"
  "rs_tp2_sp   ref     2  1  2  1  16   0    1f1b        1 selective mesh.sp=true"
  "3d_2x2x2    ref     2  2  2  2   2   0    1f1b        1 none"
  "3d_sp       ref     2  2  2  2   2   0    1f1b        1 none      mesh.sp=true"
  "ref_l4      ref_l4  4  1  1  1  16   0    1f1b        1 none"
  "pp2_inter   ref_l4  4  1  1  2   4   0    interleaved 2 none"
  "tbw_ref     tbw_ref 2  1  1  1  16   0    pipedream-2bw 1 none      clip_grad_norm=0 data.train=@varied"
  "tbw_pp2     tbw_ref 2  1  1  2   4   0    pipedream-2bw 1 none      clip_grad_norm=0 data.train=@varied"
  "tbw_dp2pp2  tbw_ref 2  2  1  2   2   0    pipedream-2bw 1 none      clip_grad_norm=0 data.train=@varied"
)
# freeze and 16-bit storage (vlm_equivalence.sh frozen16; its own ctest entry)
frozen16=(
  "fzv_ref     fzv_ref 2  1  1  1  16   0    1f1b        1 none      model.freeze.vision=true optimizer.weight_decay=0.1"
  "fzv_z1_dp2  fzv_ref 2  2  1  1   8   1    1f1b        1 none      model.freeze.vision=true optimizer.weight_decay=0.1"
  "fzv_tp2_sp  fzv_ref 2  1  2  1  16   0    1f1b        1 none      model.freeze.vision=true mesh.sp=true optimizer.weight_decay=0.1"
  "fzv_pp2     fzv_ref 2  1  1  2   4   0    1f1b        1 none      model.freeze.vision=true optimizer.weight_decay=0.1"
  "fzl_ref     fzl_ref 2  1  1  1  16   0    1f1b        1 none      model.freeze.llm=true optimizer.weight_decay=0.1"
  "fzl_z2_dp2  fzl_ref 2  2  1  1   8   2    1f1b        1 none      model.freeze.llm=true optimizer.weight_decay=0.1"
  "fzl_tp2     fzl_ref 2  1  2  1  16   0    1f1b        1 none      model.freeze.llm=true optimizer.weight_decay=0.1"
  "fzl_pp2     fzl_ref 2  1  1  2   4   0    1f1b        1 none      model.freeze.llm=true optimizer.weight_decay=0.1"
  "fzv_z3_dp2  fzv_ref 2  2  1  1   8   3    1f1b        1 none      model.freeze.vision=true optimizer.weight_decay=0.1 buckets.mb=0.02"
  "fzl_z3_dp2  fzl_ref 2  2  1  1   8   3    1f1b        1 none      model.freeze.llm=true optimizer.weight_decay=0.1 buckets.mb=0.02"
  "fzv_z3_dp2pp2 fzv_ref 2 2 1  2   4   3    1f1b        1 none      model.freeze.vision=true optimizer.weight_decay=0.1 buckets.mb=0.02"
  "fzl_z3_dp2pp2 fzl_ref 2 2 1  2   4   3    1f1b        1 none      model.freeze.llm=true optimizer.weight_decay=0.1 buckets.mb=0.02"
  "fzv_bf16    fzv_bf16 2 1  1  1  16   0    1f1b        1 none      model.freeze.vision=true optimizer.weight_decay=0.1 precision=bf16"
  "fzv_z3_bf16 fzv_bf16 2 2  1  1   8   3    1f1b        1 none      model.freeze.vision=true optimizer.weight_decay=0.1 precision=bf16 buckets.mb=0.02"
  "bf16_ref    bf16_ref 2 1  1  1  16   0    1f1b        1 none      precision=bf16"
  "bf16_dp2    bf16_ref 2 2  1  1   8   0    1f1b        1 none      precision=bf16"
  "bf16_tp2    bf16_ref 2 1  2  1  16   0    1f1b        1 none      precision=bf16"
  "fp16_ref    fp16_ref 2 1  1  1  16   0    1f1b        1 none      precision=fp16"
  "fp16_dp2    fp16_ref 2 2  1  1   8   0    1f1b        1 none      precision=fp16"
)
GROUP=${1:-layouts}
[ "$GROUP" = layouts ] || [ "$GROUP" = frozen16 ] || { echo "usage: vlm_equivalence.sh [layouts|frozen16]" >&2; exit 2; }
[ "$GROUP" = layouts ] || layouts=("${frozen16[@]}")
for row in "${layouts[@]}"; do
  read -r name ref layers dp tp pp micro zero sched virt rc extra <<<"$row"
  sets=() freeze=none prec=fp32
  for kv in ${extra:-}; do
    sets+=(--set "${kv/@varied/$WORK/varied.bin}")
    case $kv in model.freeze.*) freeze=${kv#model.freeze.}; freeze=${freeze%=*} ;; precision=*) prec=${kv#*=} ;; esac
  done
  if [ -n "${LAYOUTS:-}" ] && [ $name != $ref ] && [[ " $LAYOUTS " != *" $name "* ]]; then continue; fi
  if [ -n "${LAYOUTS:-}" ] && [ $name = $ref ] && [[ " $LAYOUTS " != *" $ref "* ]] &&
     ! printf '%s\n' "${layouts[@]}" | awk -v r=$ref -v l=" $LAYOUTS " '$2 == r && index(l, " " $1 " ") { f = 1 } END { exit !f }'; then
    continue
  fi
  build_plan $name plans/vlm_tiny.lua "${common[@]}" --set mesh.dp=$dp --set mesh.tp=$tp --set mesh.pp=$pp \
    --set batch.micro=$micro --set zero=$zero --set pipeline.schedule=$sched --set pipeline.virtual=$virt \
    --set recompute=$rc --set model.llm.layers=$layers --set cluster.devices_per_node=$((dp * tp * pp)) \
    "${sets[@]}"
  run_plan $name --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" >/dev/null
  if [ $name = $ref ]; then run_plan $ref --steps 0 --save "$WORK/$ref.init" >/dev/null; fi
  if [ $freeze != none ]; then
    # the frozen part's weights are bit for bit their initial values, and the
    # rest trained (ckpt diff lists each tensor that differs at all)
    # (a 16-bit run against the fp32 run's initial weights: its own initial
    # checkpoint comes from the same save, so a frozen weight lost in it
    # would match itself)
    init=$WORK/$ref.init
    [ $prec = fp32 ] || init=$WORK/fz${freeze:0:1}_ref.init
    moved=$("$WEFT" ckpt diff "$init/model.safetensors" "$WORK/$name.ckpt/model.safetensors" |
            sed -n 's/^\([^ ]*\) *max|a-b|.*/\1/p') || true
    # (the parts by LLaVA's names, as the prelude's freeze reads them)
    if [ $freeze = vision ]; then part='^model\.vision_tower\.'
    else part='^model\.\(vision_tower\|multi_modal_projector\)\.'; fi
    # freeze llm: only encoder and projector tensors may move; vision: none of the encoder's
    if [ $freeze = vision ]; then
      bad=$(grep -c "$part" <<<"$moved" || true)
    else
      bad=$(grep -vc "$part" <<<"$moved" || true)
    fi
    check "$name: the frozen $freeze weights bit-identical to their initial values ($bad moved), $(grep -c . <<<"$moved") tensors trained" \
      test "$bad" = 0 -a -n "$moved"
  fi
  [ $name = $ref ] && continue
  what="dp $dp tp $tp pp $pp $sched v$virt, micro $micro, ZeRO-$zero, recompute $rc${extra:+, $extra}"
  if [ $prec = fp32 ]; then
    loss_tol=$LOSS_TOL norm_tol=$NORM_TOL w_tol=$(reduction_noise $STEPS $((GLOBAL * SEQ)))
  else
    # 16-bit storage (lib.sh's storage_noise): the weights within
    # W = sqrt(T (A + B) / 3) u of their updates, A and B the two runs'
    # roundings on a value's path in a step, plus fp32's reordering.  The
    # gradient norm is a function of those weights and of its step's
    # roundings: held to W.  A loss moves with the weights' updates, so their
    # difference moves it by at most W of what training has moved it,
    # W |L_t - L_1|, plus its own step's roundings, sqrt((A + B) / 3) u per
    # token loss, averaged over the K tokens (independent): relative to L_t,
    # the worst step's sum
    u=$([ $prec = bf16 ] && echo 0.00390625 || echo 0.00048828125)  # 2^-8, 2^-11
    sa=$(rounding_sites "$WORK/$ref") sb=$(rounding_sites "$WORK/$name")
    w_tol=$(awk -v a="$(storage_noise $STEPS $u $sa $sb)" -v b="$(reduction_noise $STEPS $((GLOBAL * SEQ)))" \
            'BEGIN { printf "%.3e", a + b }')
    loss_tol=$(awk -v w=$w_tol -v u=$u -v s=$((sa + sb)) -v k=$((GLOBAL * SEQ)) '
      { l = $0; sub(/.*"loss": /, "", l); sub(/[,}].*/, "", l); if (NR == 1) l1 = l
        t = (w * (l > l1 ? l - l1 : l1 - l) + sqrt(s / 3) * u / sqrt(k) * l) / l; if (t > worst) worst = t }
      END { printf "%.3e", worst }' "$WORK/$ref.jsonl")
    norm_tol=$w_tol
    what="$what; 16-bit tolerances: losses $loss_tol, norms and weights $w_tol"
  fi
  loss_msg=$(same_field loss "$WORK/$ref.jsonl" "$WORK/$name.jsonl" $loss_tol) && ok=1 || ok=0
  norm_msg=$(same_field grad_norm "$WORK/$ref.jsonl" "$WORK/$name.jsonl" $norm_tol) || ok=0
  desc_msg=$(same_field loss_descriptive "$WORK/$ref.jsonl" "$WORK/$name.jsonl" $loss_tol) || ok=0
  # the key biases (the middle third of the LLM's fused c_attn bias; the
  # encoder's, saved apart as SigLIP's k_proj.bias, whole) have a zero
  # gradient in exact arithmetic (softmax ignores a shift shared by all
  # keys), so they hold rounding noise AdamW turned into eps-limited steps
  # (16-bit: whole steps): held to adam_reach alone (precision.sh).  With the
  # 2BW rows' short captions they reach 4.2e-4 of their updates, against
  # reduction_noise's 2.3e-4.
  noise=(--noise "*h.*.attn.c_attn.bias:32:64" --noise "*.self_attn.k_proj.bias:0:1073741824")
  w_msg=$("$WEFT" ckpt diff "$WORK/$ref.ckpt/model.safetensors" "$WORK/$name.ckpt/model.safetensors" \
          --norm-tol "$w_tol" --from "$WORK/$ref.init/model.safetensors" "${noise[@]}" \
          --bound "$(adam_reach "$WORK/$ref/stage0.c" "$WORK/$ref.jsonl")" | tail -n 1) || ok=0
  check "$name ($what): $loss_msg, $norm_msg, $desc_msg; $w_msg" test $ok = 1
done
if [ "$GROUP" = frozen16 ]; then
  # a frozen run's checkpoint holds the frozen weights too, and a resume from
  # it after 5 of the 10 steps ends bit-identical to the uninterrupted run
  # (the frozen parameters have no optimizer state to restore)
  strip() { sed 's/, "ms".*//' "$1"; }
  # (ZeRO-3's rows too: the frozen parameters, outside its shards, saved
  # and loaded whole; at pp 2 with freeze llm, a stage with no shard at all)
  for ref in fzv_ref fzl_ref fzv_bf16 fzv_z3_dp2 fzl_z3_dp2 fzl_z3_dp2pp2; do
    [ -f "$WORK/$ref.jsonl" ] || continue
    run_plan $ref --steps 5 --save "$WORK/$ref.half" >/dev/null
    run_plan $ref --resume "$WORK/$ref.half" --metrics "$WORK/$ref.resumed.jsonl" --save "$WORK/$ref.resumed" >/dev/null
    check "$ref: resumed after step 5 of 10, steps 6-10 and the final weights bit-identical" \
      eval 'cmp -s <(strip "$WORK/$ref.resumed.jsonl") <(strip "$WORK/$ref.jsonl" | sed -n 6,10p) &&
            "$WEFT" ckpt diff "$WORK/$ref.ckpt/model.safetensors" "$WORK/$ref.resumed/model.safetensors" >/dev/null'
  done
  # ZeRO-3 keeps frozen parameters whole on every rank, outside its shards
  # (no gradient to reduce, no optimizer state to shard): weft check says so
  z3=$("$WEFT" check plans/vlm_tiny.lua --set mesh.dp=2 --set cluster.devices_per_node=2 --set zero=3 \
       --set batch.micro=16 --set model.freeze.vision=true 2>&1 | grep '^frozen' || true)
  check "weft check, ZeRO-3 with freeze vision: ${z3:-no frozen line}" grep -q "whole on every rank outside ZeRO-3's shards" <<<"$z3"
  # freeze llm keeps the fused pairs (their backward's input half alone,
  # fuse.c): its activation gradients are the unfrozen run's
  agrad() { "$WEFT" check plans/vlm_tiny.lua "$@" | sed -n 's/^ *act\. grads *//p'; }
  a_full=$(agrad) a_fzl=$(agrad --set model.freeze.llm=true)
  check "weft check, freeze llm: activation gradients ${a_fzl:-?} (unfrozen ${a_full:-?})" test -n "$a_full" -a "$a_full" = "$a_fzl"
  # (the LLM's four fused add + layernorm pairs run their input half, and
  # its two c_proj linears their input gradient with the gelu's)
  [ -f "$WORK/fzl_ref/stage0.c" ] && check "fzl_ref: the frozen language model's fused pairs kept (input halves)" \
    eval '[ $(grep -c "wf_residual_layernorm_bwd_input(" "$WORK/fzl_ref/stage0.c") = 4 ] &&
          [ $(grep -c "wf_linear_dgelu_bwd_input(" "$WORK/fzl_ref/stage0.c") = 4 ]'
  # weft simulate leaves the frozen encoder's backward out: what remains of
  # it and the projector is their forward and the projector's weight gradients
  enc() {
    "$WEFT" simulate plans/vlm_tiny.lua --set mesh.pp=2 --set cluster.devices_per_node=2 --set batch.micro=8 "$@" |
      sed -n 's/^encoder .* \([0-9.]*\) ms of the first chunk.*/\1/p'
  }
  full=$(enc) frozen=$(enc --set model.freeze.vision=true)
  check "simulate, pp 2, freeze vision: the encoder and projector ${frozen:-?} ms a microbatch, ${full:-?} ms trained" \
    awk -v f="${frozen:-0}" -v t="${full:-0}" 'BEGIN { exit !(f > 0 && f < t / 2) }'
  echo "$passed passed, $failed failed"
  [ $failed = 0 ]
  exit
fi
# the encoder and projector run on the first pipeline stage only; selective
# recompute recomputes the encoder's bidirectional attention as such
[ -f "$WORK/rs_tp2/stage0.c" ] && check "rs_tp2: the encoder's attention recomputed with its prefix" \
  eval '[ $(grep -c "wf_attention_prefix_fwd" "$WORK/rs_tp2/stage0.c") -gt 2 ]'
[ -f "$WORK/pp2/stage1.c" ] && check "pp2: the patch embedding and projector on stage 0, not stage 1" \
  eval 'grep -q wf_patch_embed_fwd "$WORK/pp2/stage0.c" && grep -q MULTI_MODAL_PROJECTOR "$WORK/pp2/stage0.c" &&
        ! grep -q "wf_patch_embed_fwd\|MULTI_MODAL_PROJECTOR" "$WORK/pp2/stage1.c"'
# weft simulate prices the encoder: on pp 2 it and the projector sit on the
# first chunk, which then outweighs the second (a bubble on the lighter stage)
sim=$("$WEFT" simulate plans/vlm_tiny.lua --set mesh.pp=2 --set cluster.devices_per_node=2 --set batch.micro=8)
share=$(sed -n 's/^encoder .*(\([0-9.]*\)%)$/\1/p' <<<"$sim")
bubble=$(sed -n 's/^bubble *\([0-9.]*\)%.*/\1/p' <<<"$sim")
check "simulate, pp 2: the encoder is ${share:-?}% of the first chunk's compute, a ${bubble:-?}% bubble" \
  awk -v s="${share:-0}" -v b="${bubble:-0}" 'BEGIN { exit !(s > 0 && s < 100 && b > 0) }'
echo "$passed passed, $failed failed"
[ $failed = 0 ]
