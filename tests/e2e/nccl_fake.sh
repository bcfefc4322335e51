#!/usr/bin/env bash
# comm = "nccl" without a GPU: runtime/cuda/coll_nccl.c, unchanged, under the
# CPU kernels, with NCCL and the CUDA runtime replaced by host test doubles
# (tests/nccl_fake: NCCL's semantics over MPI, synchronous streams).  Each
# layout must give the single-rank losses and weights within the equivalence
# tolerances (tests/e2e/equivalence.sh; weights: lib.sh's weights_match): bucket all-reduces, ZeRO-1/2/3 with
# dp 2 and dp 3 (buckets padded so that dp divides them: each bucket one
# ncclReduceScatter, in place as NCCL defines it, no grouped reduces or
# broadcasts; counted by the fake, WEFT_FAKE_NCCL_CALLS), tensor parallelism with its max / fp64 all-reduces and
# sequence-parallel gathers, and pipeline messages matched in issue order, as
# NCCL matches them (the MPI path matches by tag), also with ranks numbered
# in another mesh.order (stages not contiguous).  Streams and events are not
# exercised here (tests/gpu/check.sh on a GPU).  Also: two ranks of one
# communicator on one device stop with a message naming comm = "mpi".
source "$(dirname "$0")/lib.sh"
FAKE=${WEFT_NCCL_FAKE:?set WEFT_NCCL_FAKE to the folder of the fake-NCCL runtime (build/tests/nccl_fake)}
PLAN=plans/tiny.lua
DATA=$(make_data)
common=(--set train.steps=10 --set model.hidden=64 --set model.seq=64 --set data.train="$DATA"
        --set batch.global=16)

# build_fake NAME [--set ...]: like build_plan, against the fake-NCCL runtime
build_fake() {
  local name=$1
  shift
  "$WEFT" compile "$PLAN" -o "$WORK/$name" "${common[@]}" "$@" 2>/dev/null
  configure "$WORK/$name" "$WORK/$name/build" -DWEFT_RUNTIME="$FAKE" >"$WORK/$name.cmake.log" 2>&1 &&
    cmake --build "$WORK/$name/build" >"$WORK/$name.build.log" 2>&1
}

build_plan ref "$PLAN" "${common[@]}" --set mesh.dp=1 --set batch.micro=16
run_plan ref --metrics "$WORK/ref.jsonl" --save "$WORK/ref.ckpt" >/dev/null
run_plan ref --steps 0 --save "$WORK/ref.init" >/dev/null  # the common initial weights
build_plan ref_l4 "$PLAN" "${common[@]}" --set mesh.dp=1 --set batch.micro=16 --set model.layers=4
run_plan ref_l4 --metrics "$WORK/ref_l4.jsonl" --save "$WORK/ref_l4.ckpt" >/dev/null
run_plan ref_l4 --steps 0 --save "$WORK/ref_l4.init" >/dev/null  # the common initial weights
build_plan ref_g24 "$PLAN" "${common[@]}" --set mesh.dp=1 --set batch.micro=24 --set batch.global=24
run_plan ref_g24 --metrics "$WORK/ref_g24.jsonl" --save "$WORK/ref_g24.ckpt" >/dev/null
run_plan ref_g24 --steps 0 --save "$WORK/ref_g24.init" >/dev/null  # the common initial weights

# name     reference  overrides
rows=(
  "dp2       ref     --set mesh.dp=2 --set batch.micro=8 --set buckets.mb=0.05"
  "dp2_z1    ref     --set mesh.dp=2 --set batch.micro=4 --set buckets.mb=0.05 --set zero=1"
  "dp2_z2    ref     --set mesh.dp=2 --set batch.micro=4 --set buckets.mb=0.05 --set zero=2"
  "dp2_z3    ref     --set mesh.dp=2 --set batch.micro=8 --set buckets.mb=0.05 --set zero=3"
  "dp3_z1    ref_g24 --set mesh.dp=3 --set batch.global=24 --set batch.micro=8 --set buckets.mb=0.05 --set zero=1"
  "dp3_z2    ref_g24 --set mesh.dp=3 --set batch.global=24 --set batch.micro=4 --set buckets.mb=0.05 --set zero=2"
  "dp3_z3    ref_g24 --set mesh.dp=3 --set batch.global=24 --set batch.micro=8 --set buckets.mb=0.05 --set zero=3"
  "tp2_sp    ref     --set mesh.dp=1 --set mesh.tp=2 --set mesh.sp=true --set batch.micro=16"
  "dp2_tp2   ref     --set mesh.dp=2 --set mesh.tp=2 --set batch.micro=8"
  "pp2_1f1b  ref_l4  --set model.layers=4 --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=4"
  "pp2_zbh1  ref_l4  --set model.layers=4 --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=4 --set pipeline.schedule=zb-h1"
  "pp2_inter ref_l4  --set model.layers=4 --set mesh.dp=1 --set mesh.pp=2 --set batch.micro=4 --set pipeline.schedule=interleaved --set pipeline.virtual=2"
  "dp2_pp2   ref_l4  --set model.layers=4 --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=2 --set zero=1"
  "dp2_pp2_o ref_l4  --set model.layers=4 --set mesh.dp=2 --set mesh.pp=2 --set batch.micro=2 --set mesh.order=pp-dp-tp"
)
for row in "${rows[@]}"; do
  read -r name ref sets <<<"$row"
  read -r -a sets <<<"$sets"
  if ! build_fake "$name" "${sets[@]}"; then
    failed=$((failed + 1)); echo "FAIL $name: does not build against the fake-NCCL runtime"
    tail -5 "$WORK/$name.build.log"; continue
  fi
  if ! WEFT_FAKE_NCCL_CALLS="$WORK/$name.calls" timeout 300 "$WORK/$name/launch.sh" --quiet --metrics "$WORK/$name.jsonl" --save "$WORK/$name.ckpt" \
       >"$WORK/$name.log" 2>&1; then
    failed=$((failed + 1)); echo "FAIL $name: did not run: $(tail -n 2 "$WORK/$name.log")"; continue
  fi
  loss=$(same_field loss "$WORK/$ref.jsonl" "$WORK/$name.jsonl" 2e-6) && ok=1 || ok=0
  norm=$(same_field grad_norm "$WORK/$ref.jsonl" "$WORK/$name.jsonl" 1e-6) || ok=0
  global=16; [ $ref = ref_g24 ] && global=24
  w=$(weights_match "$WORK/$ref.ckpt/model.safetensors" "$WORK/$name.ckpt/model.safetensors" \
      "$WORK/$ref.init/model.safetensors" "$WORK/$ref/stage0.c" "$WORK/$ref.jsonl" $((global * 64))) || ok=0
  # ZeRO: every bucket one equal reduce-scatter, in place as NCCL defines it
  # (ZeRO-1 too: in the gradient arena, no shard buffer and no copy back,
  # runtime/common/zero.c; the fake refuses any other overlap) per microbatch from ZeRO-2 on,
  # one a step for ZeRO-1, and no grouped ncclReduce or ncclBroadcast: the
  # compiler padded the buckets dp 3 does not divide
  case $name in
    dp*_z*)
      zero=${name##*_z} steps=10 nb=$(sed -n 's/^static const wf_bucket BUCKETS\[\([0-9]*\)\].*/\1/p' "$WORK/$name/stage0.c")
      micro=$(sed -n 's/.*batch.micro=\([0-9]*\).*/\1/p' <<<"${sets[*]}") dp=${name:2:1} global=16
      [ $ref = ref_g24 ] && global=24
      per_step=$nb; [ "$zero" -ge 2 ] && per_step=$((nb * global / micro / dp))
      for f in "$WORK/$name.calls".*; do
        got=$(awk -v want=$((per_step * steps)) '$1 == "ncclReduceScatter" { rs = $2 } $1 == "ReduceScatterInPlace" { in_place = $2 }
                $1 == "ncclReduce" || $1 == "ncclBroadcast" { other += $2 }
                END { printf "%d reduce-scatters (%d expected, %d in place), %d grouped reduces or broadcasts", rs, want, in_place, other
                      exit !(rs == want && in_place == rs && other == 0) }' "$f") || ok=0
        w="$w; ${f##*.calls.}: $got"
      done ;;
  esac
  if [ $ok = 1 ]; then passed=$((passed + 1)); echo "ok   $name (nccl): $loss, $norm; $w"
  else failed=$((failed + 1)); echo "FAIL $name (nccl): $loss, $norm; $w"; fi
done

# 16-bit gradients (grad16) under ZeRO-1 over NCCL, whose in-place
# reduce-scatter leaves each rank's sum at its own part, so runtime/common/
# grad16.c's zero1_place rounds it (fp32 sums, in the staging) or finds it in
# place (bf16 sums, in the 16-bit arena) and keeps floats only for the parts
# summed after the dp sum (sequence parallelism's, tp 2): every step's loss
# and norm and the checkpoints bit for bit those of the float arena
# (WEFT_GRAD16=0) over the same fake, and one in-place reduce-scatter a bucket
# and step (z1c16).  (The MPI path, which leaves the sum at the bucket's start, is
# tests/e2e/grad16.sh's.)
g16rows=("z1sp --set mesh.dp=2 --set mesh.tp=2 --set mesh.sp=true"
         "z1c16 --set mesh.dp=2 --set dp_comm=bf16")
strip() { sed 's/, "ms".*//' "$1"; }  # step, loss, grad_norm, lr (not the times and bytes)
for row in "${g16rows[@]}"; do
  read -r name sets <<<"$row"
  read -r -a sets <<<"$sets"
  for form in f32 g16; do
    g=0; [ $form = g16 ] && g=1
    WEFT_GRAD16=$g build_fake "${name}_$form" "${sets[@]}" --set zero=1 --set precision=bf16 --set batch.micro=4 \
      --set buckets.mb=0.05 || echo "${name}_$form: does not build against the fake-NCCL runtime"
    WEFT_FAKE_NCCL_CALLS="$WORK/${name}_$form.calls" timeout 300 "$WORK/${name}_$form/launch.sh" --quiet \
      --metrics "$WORK/${name}_$form.jsonl" --save "$WORK/${name}_$form.ckpt" >"$WORK/${name}_$form.log" 2>&1
  done
  same16() {
    grep -q '\.grad16 = 1' "$WORK/${1}_g16/stage0.c" && ! grep -q '\.grad16 = 1' "$WORK/${1}_f32/stage0.c" &&
      [ "$(wc -l <"$WORK/${1}_g16.jsonl")" = 10 ] && cmp -s <(strip "$WORK/${1}_f32.jsonl") <(strip "$WORK/${1}_g16.jsonl") &&
      "$WEFT" ckpt diff "$WORK/${1}_f32.ckpt/model.safetensors" "$WORK/${1}_g16.ckpt/model.safetensors" >/dev/null &&
      "$WEFT" ckpt diff "$WORK/${1}_f32.ckpt/optimizer.safetensors" "$WORK/${1}_g16.ckpt/optimizer.safetensors" >/dev/null
  }
  check "$name (nccl): 16-bit gradients under ZeRO-1 give the float arena's losses, norms and checkpoints bit for bit" \
    same16 "$name"
  in_place() {
    local nb=$(sed -n 's/^static const wf_bucket BUCKETS\[\([0-9]*\)\].*/\1/p' "$WORK/${1}_g16/stage0.c") f
    for f in "$WORK/${1}_g16.calls".*; do
      awk -v want=$((nb * 10)) '$1 == "ncclReduceScatter" { rs = $2 } $1 == "ReduceScatterInPlace" { in_place = $2 }
           END { exit !(rs == want && in_place == rs) }' "$f" || return 1
    done
  }
  # (dp only: sequence parallelism reduce-scatters over tp too)
  if [ $name = z1c16 ]; then
    check "$name (nccl): 16-bit gradients: one in-place reduce-scatter a bucket and step" in_place "$name"
  fi
done

WEFT_FAKE_ONE_DEVICE=1 timeout 120 "$WORK/dp2/launch.sh" --quiet --steps 1 >"$WORK/one_device.log" 2>&1 || true
check "two ranks of a communicator on one device: stopped, naming comm = \"mpi\"" \
  grep -Eq "rank [01]: ncclCommInitRank failed .*ranks 0 and 1 of a dp group both use GPU 0 .*compile with comm = \"mpi\"" \
  "$WORK/one_device.log"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
