#!/usr/bin/env bash
# Data-parallel gradient sums in 16 bits (plan.dp_comm = "bf16";
# runtime/common/dp_comm.c, compiler/wire.c) on the CPU backend: tiny, bf16,
# one microbatch a step, against the same plan with fp32 sums (the default);
# with ZeRO 1/2/3 (the gradients' reduce-scatter in 16 bits); and over NCCL
# (runtime/cuda/coll_nccl.c over tests/nccl_fake, when WEFT_NCCL_FAKE is set).
#
# Derived, not measured.  The generated backward rounds every gradient it
# writes to bf16 (the CPU emulates the 16-bit arithmetic), so each rank's
# bucket holds bf16 values and packing them is exact.
#   - dp 2: fp32 sums compute a + b in fp32, and the optimizer step rounds it
#     to bf16; the bf16 sum (coll.h) computes round(a + b in fp32): the same
#     operations.  The runs must be bit-identical (losses, norms, weights).  A
#     wrong packing, a truncating sum, a bucket widened from the wrong bytes
#     or never widened breaks it.  The same holds under ZeRO 1, 2 and 3 (one
#     microbatch a step: ZeRO-2/3's shard accumulates one reduced part, which
#     the optimizer step rounds as it rounds ZeRO-1's), against the fp32 run of
#     the same ZeRO stage; and over NCCL, whose fake sums two values as MPI's
#     op does (the all-reduce; ZeRO-2's in-place reduce-scatter through
#     scratch), against the host-MPI fp32 run.
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
#     bf16 layout tolerance, 1e-4 relative (measured: see the output).  ZeRO-2
#     at dp 4 is held to the same 6u of the plain fp32 run (the fp32 sums'
#     own order differs by ~1e-7, far below u).
#   - dp 3 (NCCL, ZeRO-1, small buckets the compiler pads so that dp 3
#     divides them: one 16-bit ncclReduceScatter a bucket): one rounding of a partial sum,
#     u |g1 + g2| <= u sum_j |g_j|, and u |S| on each side: with
#     sum_j ||g_j|| <= sqrt(3) ||S|| (as above) the norms agree within
#     (sqrt(3) + 2) u < 4u = 1.56e-2 of the fp32 ZeRO-1 run over host MPI.
# And the bytes: weft check's dp row halves (tiny's buckets hold all
# Psi = 842496 parameters; at dp 2, 2 ranks x Psi x 4 bytes = 6.43 MiB in
# fp32, x 2 bytes = 3.21 MiB in bf16); under ZeRO-1 the reduce-scatter halves
# and the parameters' all-gather moves them as stored, 16-bit (param16.c:
# 3.21 + 1.61 = 4.82 MiB with fp32 sums, 1.61 + 1.61 = 3.21 MiB bf16); the
# program asks for it (.dp_comm16 = 1) and
# its staging buffer, and allocates what the memory plan says to the byte.
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
# ZeRO at dp 2 (one microbatch a step), and ZeRO-2 at dp 4
for z in 1 2 3; do
  for dc in bf16 fp32; do
    build_plan "dp2_z${z}_$dc" plans/tiny.lua "${small[@]}" --set mesh.dp=2 --set batch.micro=8 --set zero=$z --set dp_comm=$dc
    run_plan "dp2_z${z}_$dc" --metrics "$WORK/dp2_z${z}_$dc.jsonl" --save "$WORK/dp2_z${z}_$dc.ckpt" >"$WORK/dp2_z${z}_$dc.log"
  done
done
build_plan dp4_z2_bf16 plans/tiny.lua "${small[@]}" --set mesh.dp=4 --set batch.micro=4 --set zero=2 --set dp_comm=bf16
run_plan dp4_z2_bf16 --metrics "$WORK/dp4_z2_bf16.jsonl" >/dev/null
# ZeRO-1 with float gradients (WEFT_GRAD16=0) reduces bf16 sums in place in
# the arena and widens them into the rank's part (runtime/common/zero.c: dp 3
# has rank 0's widened in place and two ranks' from the bucket's start): the
# plain dp 3 all-reduce's bf16 sums are the same single-add roundings, so the
# losses and norms must match it bit for bit
for z in 0 1; do
  WEFT_GRAD16=0 build_plan "dp3_z${z}_f32g" plans/tiny.lua "${small[@]}" --set mesh.dp=3 --set batch.global=24 \
    --set batch.micro=8 --set buckets.mb=0.05 --set dp_comm=bf16 --set zero=$z
  run_plan "dp3_z${z}_f32g" --metrics "$WORK/dp3_z${z}_f32g.jsonl" >/dev/null
done
# over NCCL (the fake: coll_nccl.c unchanged over MPI, the CPU kernels)
if [ -n "${WEFT_NCCL_FAKE:-}" ]; then
  build_fake() {  # like build_plan, against the fake-NCCL runtime
    local name=$1
    shift
    "$WEFT" compile plans/tiny.lua -o "$WORK/$name" "${small[@]}" "$@" 2>/dev/null &&
      configure "$WORK/$name" "$WORK/$name/build" -DWEFT_RUNTIME="$WEFT_NCCL_FAKE" >"$WORK/$name.cmake.log" 2>&1 &&
      cmake --build "$WORK/$name/build" >"$WORK/$name.build.log" 2>&1
  }
  build_fake nccl_dp2_bf16 --set mesh.dp=2 --set batch.micro=8 --set dp_comm=bf16
  build_fake nccl_dp2_z2_bf16 --set mesh.dp=2 --set batch.micro=8 --set zero=2 --set dp_comm=bf16
  three=(--set mesh.dp=3 --set batch.global=24 --set batch.micro=8 --set zero=1 --set buckets.mb=0.05)
  build_fake nccl_dp3_z1_bf16 "${three[@]}" --set dp_comm=bf16
  build_plan dp3_z1_fp32 plans/tiny.lua "${small[@]}" "${three[@]}"
  for name in nccl_dp2_bf16 nccl_dp2_z2_bf16 nccl_dp3_z1_bf16 dp3_z1_fp32; do
    run_plan "$name" --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" >"$WORK/$name.log"
  done
fi
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
check "dp 3 ZeRO-1, float gradients, bf16 sums in place: the plain dp 3's losses and norms bit for bit" \
  cmp -s <(strip "$WORK/dp3_z0_f32g.jsonl") <(strip "$WORK/dp3_z1_f32g.jsonl")
exact_memory() {  # rank 0's metrics: mem_bytes = mem_planned_bytes
  tail -n 1 "$WORK/$1.jsonl" | awk '{ match($0, /"mem_bytes": [0-9]+/); a = substr($0, RSTART + 13, RLENGTH - 13)
    match($0, /"mem_planned_bytes": [0-9]+/); p = substr($0, RSTART + 21, RLENGTH - 21)
    exit !(p > 0 && a == p) }'
}
check "dp 2: rank 0 allocated what memory.c planned to the byte, staging included" exact_memory dp2_bf16
for z in 1 2 3; do
  check "ZeRO-$z, dp 2: bf16 reduce-scatters give the fp32 ones' losses and norms bit for bit" \
    cmp -s <(strip "$WORK/dp2_z${z}_bf16.jsonl") <(strip "$WORK/dp2_z${z}_fp32.jsonl")
  check "ZeRO-$z, dp 2: and the same final weights" \
    "$WEFT" ckpt diff "$WORK/dp2_z${z}_bf16.ckpt/model.safetensors" "$WORK/dp2_z${z}_fp32.ckpt/model.safetensors"
  check "ZeRO-$z: rank 0 allocated what memory.c planned to the byte, staging included" exact_memory "dp2_z${z}_bf16"
done
norm_within() {  # norm_within NAME REF BOUND: step 1's gradient norms within BOUND relative, and not equal
  local a b rel
  a=$(field grad_norm "$WORK/$1.jsonl" 1) b=$(field grad_norm "$WORK/$2.jsonl" 1)
  rel=$(awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; if (d < 0) d = -d; printf "%.3g", d / b }')
  check "$1, step 1: the same loss as $2 bit for bit" test "$(field loss "$WORK/$1.jsonl" 1)" = "$(field loss "$WORK/$2.jsonl" 1)"
  check "$1, step 1: gradient norm within $3 of $2's ($rel), not equal ($a vs $b)" \
    awk -v r="$rel" -v b="$3" -v x="$a" -v y="$b" 'BEGIN { exit !(r <= b && x != y) }'
}
norm_within dp4_z2_bf16 dp4_fp32 "$bound"
if [ -n "${WEFT_NCCL_FAKE:-}" ]; then
  check "NCCL, dp 2: bf16 all-reduces give host MPI's fp32 sums bit for bit" \
    cmp -s <(strip "$WORK/nccl_dp2_bf16.jsonl") <(strip "$WORK/dp2_fp32.jsonl")
  check "NCCL, ZeRO-2, dp 2: bf16 reduce-scatters in place likewise, weights too" \
    bash -c "cmp -s <(sed -e 's/, \"ms\": [^,]*//' -e 's/, \"tokens_per_s\".*}/}/' '$WORK/nccl_dp2_z2_bf16.jsonl') \
                    <(sed -e 's/, \"ms\": [^,]*//' -e 's/, \"tokens_per_s\".*}/}/' '$WORK/dp2_z2_fp32.jsonl') &&
             '$WEFT' ckpt diff '$WORK/nccl_dp2_z2_bf16.ckpt/model.safetensors' '$WORK/dp2_z2_fp32.ckpt/model.safetensors'"
  norm_within nccl_dp3_z1_bf16 dp3_z1_fp32 "$(awk -v u=$U 'BEGIN { printf "%.4g", 4 * u }')"
fi
check "the program asks for 16-bit sums" grep -q 'dp_comm16 = 1' "$WORK/dp2_bf16/stage0.c"
check "fp32 sums by default" bash -c "! grep -q dp_comm16 '$WORK/dp2_fp32/stage0.c'"
dp_bytes() { "$WEFT" check plans/tiny.lua "${small[@]}" --set mesh.dp=2 --set batch.micro=8 "$@" |
  sed -n 's/^  dp  *\([0-9.]*\) \([KMG]*i*B\) .*/\1 \2/p'; }
check "weft check: dp 6.43 MiB per step with fp32 sums" test "$(dp_bytes)" = "6.43 MiB"
check "weft check: dp 3.21 MiB per step with bf16 sums" test "$(dp_bytes --set dp_comm=bf16)" = "3.21 MiB"
check "weft check: ZeRO-1 dp 4.82 MiB per step with fp32 sums, bf16 parameters" test "$(dp_bytes --set zero=1)" = "4.82 MiB"
check "weft check: ZeRO-1 dp 3.21 MiB with bf16 gradients, bf16 parameters" test "$(dp_bytes --set zero=1 --set dp_comm=bf16)" = "3.21 MiB"
# each bucket once (sort -u): 2 Psi bytes of bf16 gradients, 2 Psi of bf16 parameters
zero_inspect=$("$WEFT" inspect plans/tiny.lua "${small[@]}" --set mesh.dp=2 --set batch.micro=8 --set zero=1 --set dp_comm=bf16 |
  grep 'ZeRO-1 bucket' | sort -u | awk '{ g += $13; w += $17 } END { print g, w }')
check "weft inspect: ZeRO-1's reduce-scatter in bf16, 2 bytes a gradient, parameters in bf16 ($zero_inspect)" \
  test "$zero_inspect" = "1684992 1684992"
check "weft inspect: each bucket's all-reduce in bf16, 2 bytes a gradient" \
  bash -c "'$WEFT' inspect plans/tiny.lua ${small[*]} --set mesh.dp=2 --set batch.micro=8 --set dp_comm=bf16 |
           grep -q 'all-reduce bucket 0 over dp group (2 ranks): bf16 '"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
