#!/usr/bin/env bash
# weft inspect: every rank's instruction stream, --rank, Chrome trace JSON that
# reads back, SVG that is well-formed, and a usage error for a rank that does
# not exist.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
mesh=(--set mesh.dp=2 --set mesh.tp=1 --set mesh.pp=2 --set batch.micro=2 --set pipeline.schedule=1f1b)
"$WEFT" inspect "$PLAN" "${mesh[@]}" >"$WORK/all.txt"
check "text lists all 4 ranks" test "$(grep -c '^rank ' "$WORK/all.txt")" = 4
check "text shows sends with bytes" grep -q "SEND.*bytes, pp group" "$WORK/all.txt"
check "text shows bucket all-reduces" grep -q "all-reduce bucket 0 over dp group (2 ranks)" "$WORK/all.txt"
"$WEFT" inspect "$PLAN" "${mesh[@]}" --rank 3 >"$WORK/r3.txt"
check "--rank 3 shows only rank 3, with its pipeline peer" \
  test "$(grep '^rank ' "$WORK/r3.txt")" = "rank 3: stage 1, dp 1, tp 0; 1 activation slot(s); pipeline peers: stage 0 = rank 1"
"$WEFT" inspect "$PLAN" "${mesh[@]}" --format chrome -o "$WORK/t.json"
check "chrome trace reads back and matches itself" "$WEFT" trace compare "$WORK/t.json" "$WORK/t.json"
"$WEFT" inspect "$PLAN" "${mesh[@]}" --set pipeline.schedule=zb-h1 --format svg -o "$WORK/t.svg"
if command -v xmllint >/dev/null; then
  check "svg is well-formed XML" xmllint --noout "$WORK/t.svg"
else
  check "svg is complete" grep -q "</svg>" "$WORK/t.svg"
fi
check "svg has the weight-gradient colour in its legend" grep -q "weight gradient" "$WORK/t.svg"
# fused pairs (compiler/fuse.c) as inspect names them; which ops pair under
# recompute, tensor parallelism and for LLaMA is tests/unit/test_passes_fuse.c's.
# Residual + layernorm: every layernorm after an add, but the pipeline
# boundary (chunk 0 ends with block 1's last add) splits the pair there
layers=$(sed -n 's/.*layers *= *\([0-9]*\).*/\1/p' "$PLAN" | head -1)
check "text names the $((2 * layers)) fused residual_layernorm pairs, ln_f among them" \
  grep -q "^fused residual_layernorm (add + layernorm in one kernel), $((2 * layers - 1)):.* ln_f\$" "$WORK/all.txt"
"$WEFT" check "$PLAN" --dump=graph >"$WORK/graph.txt" 2>&1
check "--dump=graph marks both ops of a pair" \
  bash -c "grep -q 'add .*fused with op' '$WORK/graph.txt' && grep -q 'layernorm .*fused residual_layernorm with op' '$WORK/graph.txt'"
# fused linear + gelu: every block's c_fc, across the pipeline boundary too
check "text names the $layers fused linear_gelu pairs (pp 2)" \
  grep -q "^fused linear_gelu (linear + gelu in one call), $layers: h.0.mlp.c_fc .*h.$((layers - 1)).mlp.c_fc\$" "$WORK/all.txt"
check "--dump=graph marks the linear and its gelu" \
  bash -c "grep -q 'linear .*fused linear_gelu with op' '$WORK/graph.txt' && grep -q 'gelu .*fused with op' '$WORK/graph.txt'"
# c_proj's input gradient with the gelu's backward: every block's, across
# the pipeline boundary
check "text names the $layers fused linear_dgelu pairs (pp 2)" \
  grep -q "^fused linear_dgelu (input gradient + gelu backward in one call), $layers: h.0.mlp.c_proj .*h.$((layers - 1)).mlp.c_proj\$" "$WORK/all.txt"
check "--dump=graph marks c_proj and its gelu" \
  bash -c "grep -q 'linear .*backward fused linear_dgelu with op' '$WORK/graph.txt' && grep -q 'gelu .*backward fused with op' '$WORK/graph.txt'"
# checkpoint saves (issue 18): each rank's part after its last instruction,
# with the figures of weft check's checkpoint section (compiler/report_ckpt.c)
"$WEFT" check "$PLAN" "${mesh[@]}" >"$WORK/check.txt"
read -r copy0 copy1 < <(sed -n 's/^  async copy *\([0-9.]* [KMG]*i*B\) *\([0-9.]* [KMG]*i*B\) .*/\1|\2/p' \
  "$WORK/check.txt" | tr ' |' '_ ')
copy0=${copy0//_/ } copy1=${copy1//_/ }
shards=$(sed -n 's/^  shards *\([0-9.]* [KMG]*i*B\) .*/\1/p' "$WORK/check.txt")
section() {  # section FILE RANK OUT: that rank's checkpoint lines into OUT
  awk -v r="rank $2:" '$1 " " $2 == r { on = 1; next } /^rank |^timeline/ { on = 0 }
                       on && (/checkpoint after/ || /^    /)' "$1" >"$3"
}
for r in 0 1 2 3; do section "$WORK/all.txt" $r "$WORK/ckpt$r.txt"; done
check "weft check gives 2 stage copies and the shards' bytes, no join ($copy0, $copy1; $shards)" \
  bash -c 'test -n "$1" -a -n "$2" -a -n "$3" && ! grep -q join "$4"' _ "$copy0" "$copy1" "$shards" "$WORK/check.txt"
check "rank 0 writes stage 0's files, copying what weft check says ($copy0)" \
  grep -q "writer of stage 0: --async-save copies its own pieces, $copy0, to host memory" "$WORK/ckpt0.txt"
check "rank 2 writes stage 1's files, copying what weft check says ($copy1)" \
  grep -q "writer of stage 1: --async-save copies its own pieces, $copy1, to host memory" "$WORK/ckpt2.txt"
check "rank 0 writes stage 0's shards, then the indexes and the manifest" \
  bash -c "grep -q 'writes model-00001-of-00002.safetensors' '$WORK/ckpt0.txt' &&
           grep -q 'writes model.safetensors.index.json' '$WORK/ckpt0.txt' && grep -q 'manifest.json' '$WORK/ckpt0.txt'"
check "rank 2 (a stage writer, not rank 0) writes stage 1's shards, no index" \
  bash -c "grep -q 'writes model-00002-of-00002.safetensors' '$WORK/ckpt2.txt' && ! grep -q 'index.json' '$WORK/ckpt2.txt'"
check "ranks 1 and 3 (dp 1) write nothing; under --async-save each copies its own pieces (at most its writer's, $copy0 and $copy1)" \
  bash -c "grep -q 'writes nothing (dp 0 holds the same weights).*from its own pieces, copied to host memory (at most $copy0)' '$WORK/ckpt1.txt' &&
           grep -q 'writes nothing (dp 0 holds the same weights).*from its own pieces, copied to host memory (at most $copy1)' '$WORK/ckpt3.txt'"
check "the save sits after each rank's last instruction" \
  test "$(grep -c '^  checkpoint after #' "$WORK/all.txt")" = 4
check "the timeline names the step boundary's writers" \
  grep -q '^step boundary: checkpoint writers rank 0 (stage 0), rank 2 (stage 1)' "$WORK/all.txt"
"$WEFT" inspect "$PLAN" --set mesh.dp=1 --set mesh.tp=2 --set mesh.pp=1 --set train.ckpt_every=5 >"$WORK/tp.txt"
section "$WORK/tp.txt" 0 "$WORK/tp0.txt"
section "$WORK/tp.txt" 1 "$WORK/tp1.txt"
check "tp 2: rank 1 sends its shards to rank 0, the writer; saves every 5 steps" \
  bash -c "grep -q 'sends its tp shard of each tensor to rank 0 (stage 0.s writer)' '$WORK/tp1.txt' &&
           grep -q 'every 5 steps (--ckpt DIR)' '$WORK/tp1.txt'"
check "tp 2, pp 1: rank 0 writes model.safetensors and the manifest itself" \
  bash -c "grep -q 'writes model.safetensors (.*) and optimizer.safetensors' '$WORK/tp0.txt' &&
           grep -q 'then writes config.json and manifest.json' '$WORK/tp0.txt'"
# where each bucket's reduction starts and is waited (compiler/buckets.c's
# start_in_b, zero_plan.c's wait placement), beside its listing: zb-h1 at
# dp 2, stage 1 (rank 2); its first bucket (18) holds the tied LM head's
# wte copy, which B writes whole, so it starts in B after backward op 0 (the
# head); ln_f's (19) starts in B too without ZeRO >= 2, in W with it (its
# sums staged for W); ZeRO-2 waits each in the half that started it.
zb=(--set mesh.dp=2 --set mesh.pp=2 --set pipeline.schedule=zb-h1 --set batch.micro=2 --set buckets.mb=0.05)
for zero in 0 2; do "$WEFT" inspect "$PLAN" "${zb[@]}" --set zero=$zero --rank 2 >"$WORK/zb$zero.txt"; done
check "zb-h1 dp 2: the head's bucket reads as started in B, after the head's backward (last microbatch)" \
  grep -qx "  bucket 18: started in B after backward op 0 (lmhead_xent wte.weight) in the last microbatch, waited before the optimizer step" "$WORK/zb0.txt"
check "zb-h1 dp 2: the line follows the bucket's all-reduce" \
  bash -c 'grep -A1 "^  all-reduce bucket 18 " "$1" | grep -q "^  bucket 18: started in B"' _ "$WORK/zb0.txt"
check "zb-h1 dp 2, ZeRO-2: the head's bucket started in B every microbatch and waited in B" \
  grep -q "^  bucket 18: started in B after backward op 0 (lmhead_xent wte.weight) every microbatch, waited in B after backward op" "$WORK/zb2.txt"
check "zb-h1 dp 2, ZeRO-2: ln_f's bucket (sums staged for W) started and waited in W" \
  grep -q "^  bucket 19: started in W after backward op 1 (layernorm ln_f.weight) every microbatch, waited in W after" "$WORK/zb2.txt"
check "1f1b (no split backward): buckets start in the last microbatch, naming no half" \
  bash -c 'grep -q "^  bucket 0: started after backward op [0-9]* (.*) in the last microbatch, waited before the optimizer step" "$1" &&
           ! grep -q "^  bucket [0-9]*: started in [BW]" "$1"' _ "$WORK/all.txt"
rc=0; "$WEFT" inspect "$PLAN" "${mesh[@]}" --rank 9 2>/dev/null || rc=$?
check "a rank outside the plan is a usage error" test $rc = 2
echo "$passed passed, $failed failed"
[ $failed = 0 ]
