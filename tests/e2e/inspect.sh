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
rc=0; "$WEFT" inspect "$PLAN" "${mesh[@]}" --rank 9 2>/dev/null || rc=$?
check "a rank outside the plan is a usage error" test $rc = 2
echo "$passed passed, $failed failed"
[ $failed = 0 ]
