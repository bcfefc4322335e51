#!/usr/bin/env bash
# Data-parallel gradient sums in 16 bits (plan.dp_comm = "bf16";
# runtime/common/dp_comm.c, compiler/wire.c) on the CPU backend: tiny, bf16,
# one microbatch a step, against the same plan with fp32 sums (the default).
#
# Derived, not measured.  The generated backward rounds every gradient it
# writes to bf16 (the CPU emulates the 16-bit arithmetic), so each rank's
# bucket holds bf16 values and packing them is exact.
#   - dp 2: fp32 sums compute a + b in fp32, and the optimizer step rounds it
#     to bf16; the bf16 sum (coll.h) computes round(a + b in fp32): the same
#     operations.  The runs must be bit-identical (losses, norms, weights).  A
#     wrong packing, a truncating sum, a bucket widened from the wrong bytes
#     or never widened breaks it.
#   - dp 4: the 16-bit sum of four gradients rounds after each of its three
#     adds, the fp32 one once.  The first two roundings err by at most
#     u (|g1 + g2| + |g1 + g2 + g3|) <= 2u sum_j |g_j| per element (u = 2^-8,
#     round to nearest even), the last ones by u |S| on each side (S the exact
#     sum), so ||d|| <= 2u ||sum_j |g_j| || + 2u ||S||.  The four quarters of
#     a batch are samples of one distribution: at the first step (same weights)
#     their gradients are not anti-correlated (<g_j, g_k> >= 0), so
#     sum_j ||g_j|| <= 2 ||S||, and the first step's gradient norms agree
#     within 6u = 2.34e-2 relative; its loss comes before any update and must
#     be bit-identical, and the norms must differ (the 16-bit sums are in
#     effect).  Later steps start from weights that moved apart by AdamW's
#     responses to those roundings: their losses are held to precision.sh's
#     bf16 layout tolerance, 1e-4 relative (measured: see the output).
# And the bytes: weft check's dp row halves (tiny's buckets hold all
# Psi = 842496 parameters; at dp 2, 2 ranks x Psi x 4 bytes = 6.43 MiB in
# fp32, x 2 bytes = 3.21 MiB in bf16); the program asks for it
# (.dp_comm16 = 1).
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
U=0.00390625  # 2^-8
small=(--set data.train="$DATA" --set batch.global=16 --set train.steps=5 --set precision=bf16)
for dp in 2 4; do
  for dc in bf16 fp32; do
    build_plan "dp${dp}_$dc" plans/tiny.lua "${small[@]}" --set mesh.dp=$dp --set batch.micro=$((16 / dp)) --set dp_comm=$dc
    run_plan "dp${dp}_$dc" --metrics "$WORK/dp${dp}_$dc.jsonl" --save "$WORK/dp${dp}_$dc.ckpt" >/dev/null
  done
done
strip() { sed -e 's/, "ms": [^,]*//' -e 's/, "tokens_per_s".*}/}/' "$1"; }
check "dp 2: bf16 sums give the fp32 sums' losses and norms bit for bit" \
  cmp -s <(strip "$WORK/dp2_bf16.jsonl") <(strip "$WORK/dp2_fp32.jsonl")
check "dp 2: and the same final weights" \
  "$WEFT" ckpt diff "$WORK/dp2_bf16.ckpt/model.safetensors" "$WORK/dp2_fp32.ckpt/model.safetensors"
field() { sed -n "${3}s/.*\"$1\": \\([^,}]*\\).*/\\1/p" "$2"; }
n16=$(field grad_norm "$WORK/dp4_bf16.jsonl" 1) n32=$(field grad_norm "$WORK/dp4_fp32.jsonl" 1)
check "dp 4, step 1: the same loss bit for bit" test "$(field loss "$WORK/dp4_bf16.jsonl" 1)" = "$(field loss "$WORK/dp4_fp32.jsonl" 1)"
rel=$(awk -v a="$n16" -v b="$n32" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.3g", d / b }')
bound=$(awk -v u=$U 'BEGIN { printf "%.4g", 6 * u }')
check "dp 4, step 1: gradient norm within 6u = $bound of the fp32 sums' ($rel)" \
  awk -v r="$rel" -v b="$bound" 'BEGIN { exit !(r <= b) }'
check "dp 4, step 1: and not equal to it: the 16-bit sums are in effect ($n16 vs $n32)" test "$n16" != "$n32"
msg=$(same_field loss "$WORK/dp4_fp32.jsonl" "$WORK/dp4_bf16.jsonl" 1e-4) && ok=0 || ok=1
check "dp 4, later steps: losses within 1e-4: $msg" test $ok = 0
check "the program asks for 16-bit sums" grep -q 'dp_comm16 = 1' "$WORK/dp2_bf16/stage0.c"
check "fp32 sums by default" bash -c "! grep -q dp_comm16 '$WORK/dp2_fp32/stage0.c'"
dp_bytes() { "$WEFT" check plans/tiny.lua "${small[@]}" --set mesh.dp=2 --set batch.micro=8 "$@" |
  sed -n 's/^  dp  *\([0-9.]*\) \([KMG]*i*B\) .*/\1 \2/p'; }
check "weft check: dp 6.43 MiB per step with fp32 sums" test "$(dp_bytes)" = "6.43 MiB"
check "weft check: dp 3.21 MiB per step with bf16 sums" test "$(dp_bytes --set dp_comm=bf16)" = "3.21 MiB"
check "weft inspect: each bucket's all-reduce in bf16, 2 bytes a gradient" \
  bash -c "'$WEFT' inspect plans/tiny.lua ${small[*]} --set mesh.dp=2 --set batch.micro=8 --set dp_comm=bf16 |
           grep -q 'all-reduce bucket 0 over dp group (2 ranks): bf16 '"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
