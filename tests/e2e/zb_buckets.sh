#!/usr/bin/env bash
# Zero-bubble (zb-h1) gradient buckets: a bucket whose gradients B writes
# whole (buckets.c's start_in_b: the tied LM head's wte copy; without
# ZeRO >= 2 the final norm's too, ln_f alone in its bucket at 0.05 MiB)
# starts its reduction in B (bwd_input_cK) right after its last gradient,
# not in W (bwd_weight_cK); without ZeRO >= 2 in the chunk's last B only
# (`last`), with it every microbatch, waited at that B's end.  A bucket with
# any gradient from W (LLaMA's untied lm_head beside the final norm, whose
# sum ZeRO-2 stages for W) still starts in W.  Compile only: that these
# programs train as the single rank does is e2e_equivalence's
# (dp2_pp2_zb, z1_pp2_zb, z2_pp2_zb, z3_pp2_zb; one bucket per parameter:
# z0_pp2_zb_each, z2_pp2_zb_each) and e2e_grad16's (zb_z2).
source "$(dirname "$0")/lib.sh"
tiny=(--set mesh.dp=2 --set mesh.pp=2 --set pipeline.schedule=zb-h1 --set batch.micro=2 --set buckets.mb=0.05)

# body FILE NAME OUT: the generated function NAME of FILE, header to closing brace
body() { awk -v f="static void $2(" 'index($0, f) == 1 { on = 1 } on { print } on && /^}/ { exit }' "$1" >"$3"; }

for zero in 0 1 2 3; do
  "$WEFT" compile plans/tiny.lua "${tiny[@]}" --set zero=$zero -o "$WORK/z$zero" >/dev/null 2>&1
  "$WEFT" check plans/tiny.lua "${tiny[@]}" --set zero=$zero >"$WORK/z$zero.check"
  body "$WORK/z$zero/stage1.c" bwd_input_c1 "$WORK/z$zero.b"
  body "$WORK/z$zero/stage1.c" bwd_weight_c1 "$WORK/z$zero.w"
  # stage 1's buckets 18 (wte's copy, the head's) and 19 (ln_f) are its 0 and 1
  if [ $zero -lt 2 ]; then
    start='if (last) wf_bucket_start(c, %d);'
    in_b="0 1"
  else
    start='wf_grad_bucket_start(c, %d);'
    in_b="0"  # ln_f's sums are staged in B, added into the bucket by W
  fi
  for k in 0 1; do
    line=$(printf "$start" $k)
    if [[ " $in_b " == *" $k "* ]]; then
      check "ZeRO-$zero: stage 1's bucket $k starts in B, not in W" \
        bash -c "grep -qxF '    $line' '$WORK/z$zero.b' && ! grep -qF 'bucket_start(c, $k);' '$WORK/z$zero.w'"
      check "ZeRO-$zero: weft check says bucket $((18 + k)) starts in B" \
        grep -q "^  bucket $((18 + k)) .*(ready after backward op $k, in B: started there" "$WORK/z$zero.check"
    else
      check "ZeRO-$zero: stage 1's bucket $k starts in W, not in B" \
        bash -c "grep -qxF '    $line' '$WORK/z$zero.w' && ! grep -qF 'bucket_start(c, $k);' '$WORK/z$zero.b'"
    fi
  done
  body "$WORK/z$zero/stage0.c" bwd_input_c0 "$WORK/z$zero.b0"
  check "ZeRO-$zero: no bucket of stage 0 starts in B (each has a GEMM's dW or the embedding's)" \
    bash -c "[ -s '$WORK/z$zero.b0' ] && ! grep -q 'bucket_start' '$WORK/z$zero.b0'"
  if [ $zero -ge 2 ]; then
    # waited in B, after the start, at the end of B: before the next
    # microbatch's B writes the buffer again; W waits for it nowhere
    s=$(grep -n 'wf_grad_bucket_start(c, 0);' "$WORK/z$zero.b" | cut -d: -f1 | head -n 1 || true)
    w=$(grep -n 'wf_grad_bucket_wait(c, 0);' "$WORK/z$zero.b" | cut -d: -f1 | head -n 1 || true)
    n=$(wc -l <"$WORK/z$zero.b")
    check "ZeRO-$zero: B waits for the head's bucket after starting it (line ${s:-none}), as its last call (line ${w:-none} of $n)" \
      awk -v s="$s" -v w="$w" -v n="$n" 'BEGIN { exit !(s != "" && w != "" && s + 0 < w + 0 && w + 0 == n - 1) }'
    check "ZeRO-$zero: W waits for the head's bucket nowhere" \
      bash -c "! grep -q 'wf_grad_bucket_wait(c, 0);' '$WORK/z$zero.w'"
  else
    # `last`: the chunk's final B (microbatch 3 of 4) only
    grep -o 'bwd_input_c1(c, [0-9]*, [0-9]*, [0-9]*, 1)' "$WORK/z$zero/stage1.c" >"$WORK/z$zero.last" || true
    check "ZeRO-$zero: only the last microbatch's B is told it is last" \
      bash -c "[ \$(wc -l <'$WORK/z$zero.last') = 1 ] && grep -q '^bwd_input_c1(c, 3, ' '$WORK/z$zero.last'"
  fi
done

# LLaMA's lm_head is not tied: at 0.1 MiB it shares a bucket with the final
# norm (ZeRO-2: staged for W), so that bucket starts in W
"$WEFT" compile plans/llama_tiny.lua --set mesh.dp=2 --set mesh.pp=2 --set pipeline.schedule=zb-h1 \
  --set batch.micro=2 --set zero=2 --set buckets.mb=0.1 -o "$WORK/llama" >/dev/null 2>&1
body "$WORK/llama/stage1.c" bwd_input_c1 "$WORK/llama.b"
body "$WORK/llama/stage1.c" bwd_weight_c1 "$WORK/llama.w"
check "llama ZeRO-2: the bucket of lm_head and the final norm starts in W, not in B" \
  bash -c "[ -s '$WORK/llama.b' ] && ! grep -q 'bucket_start' '$WORK/llama.b' && grep -q 'wf_grad_bucket_start' '$WORK/llama.w'"

# weft simulate prices a bucket started in B from there: on the 39.1B plan
# (ZeRO-0, dp 32 across nodes) zb-h1's W alone (the window were every bucket
# started in W) leaves 0.138 s of all-reduce exposed; with the LM head's
# bucket (the vocabulary x hidden wte copy, the stage's largest) started in
# B the rest of B hides it, and what is left is the last bucket's own
# all-reduce, as under 1F1B (whose buckets overlap the whole backward)
for sched in 1f1b zb-h1; do
  "$WEFT" simulate plans/paper/narayanan_39_1b.lua --backend cuda --set zero=0 --set pipeline.schedule=$sched \
    >"$WORK/sim.$sched"
done
sed -n 's/.*exposed dp all-reduce \([0-9.]*\) s.*/\1/p' "$WORK/sim.zb-h1" >"$WORK/exposed.zb"
sed -n 's/.*exposed dp all-reduce \([0-9.]*\) s.*/\1/p' "$WORK/sim.1f1b" >"$WORK/exposed.1f1b"
check "simulate: zb-h1's exposed dp all-reduce ($(cat "$WORK/exposed.zb") s) no more than 1F1B's ($(cat "$WORK/exposed.1f1b") s)" \
  awk 'NR == FNR { zb = $1; next } { f = $1 } END { exit !(zb != "" && f != "" && zb <= f) }' \
  "$WORK/exposed.zb" "$WORK/exposed.1f1b"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
