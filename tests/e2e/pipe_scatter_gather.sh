#!/usr/bin/env bash
# Pipeline scatter/gather (pipeline.scatter_gather; compiler/schedule.c,
# runtime/common/pipe.c): at tp 2 x pp 2 each tp rank sends its half of a
# boundary activation (and of its gradient) to its peer, and the receiving
# stage all-gathers the halves in its tp group.
#
# Derived, not measured: the boundary tensor is the same on both tp ranks of
# a stage (after the row-parallel all-reduce and the replicated residual; its
# gradient after the tp copy's all-reduce), and an all-gather copies values
# without arithmetic, so the run with scatter/gather must be bit-identical to
# the run that sends whole messages: losses, gradient norms and final
# weights, in fp32 and in bf16 (16-bit tp sums), with 1f1b and interleaved.
# A slice sent from the wrong offset, a missing or misplaced all-gather or a
# gradient that is not yet summed over tp breaks it.
#
# And the bytes (compiler/wire.c, `weft check`): this plan (tiny, 2 layers,
# h 64, N = micro 8 x seq 64 = 512 tokens, 2 microbatches a step, dp 1)
# sends per step 2 tp pairs x 2 microbatches x 1 boundary x 2 directions x
# N h 4 bytes = 1 MiB between stages (across nodes: tiny's nodes hold 2
# devices, one stage's tp group) with whole messages; with scatter/gather
# half of it, 512 KiB (divided by tp), plus 512 KiB of all-gathers inside
# the nodes' tp groups (2 stages' 2 ranks each send (tp-1)/tp of a 128 KiB
# message, 2 microbatches).  The generated program shows the split as
# explicit calls: wf_pipe_slice on every send and receive, and one
# wf_pipe_gather after each receive.
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
small=(--set data.train="$DATA" --set model.layers=2 --set model.hidden=64 --set model.seq=64
       --set batch.global=16 --set batch.micro=8 --set mesh.dp=1 --set mesh.tp=2 --set mesh.pp=2
       --set train.steps=4)
# name   precision schedule virtual layers
rows=(
  "fp32_1f1b fp32 1f1b 1 2"
  "bf16_1f1b bf16 1f1b 1 2"
  "fp32_int  fp32 interleaved 2 4"
)
strip() { sed -e 's/, "ms": [^,]*//' -e 's/, "tokens_per_s".*}/}/' "$1"; }
for row in "${rows[@]}"; do
  read -r name prec sched virt layers <<<"$row"
  for sg in true false; do
    build_plan "${name}_$sg" plans/tiny.lua "${small[@]}" --set precision=$prec --set pipeline.schedule=$sched \
      --set pipeline.virtual=$virt --set model.layers=$layers --set pipeline.scatter_gather=$sg
    run_plan "${name}_$sg" --metrics "$WORK/${name}_$sg.jsonl" --save "$WORK/${name}_$sg.ckpt" >/dev/null
  done
  check "$name: scatter/gather gives the whole messages' losses and norms bit for bit" \
    cmp -s <(strip "$WORK/${name}_true.jsonl") <(strip "$WORK/${name}_false.jsonl")
  check "$name: and the same final weights" \
    "$WEFT" ckpt diff "$WORK/${name}_true.ckpt/model.safetensors" "$WORK/${name}_false.ckpt/model.safetensors"
done
check "the default is on at tp 2 x pp 2 without sp" \
  bash -c "'$WEFT' compile plans/tiny.lua -o '$WORK/default' ${small[*]} 2>/dev/null && grep -q wf_pipe_gather '$WORK/default/stage1.c'"
s1=$WORK/fp32_1f1b_true/stage1.c
check "the program sends and receives slices" \
  bash -c "grep -q 'wf_send(c, wf_pipe_slice(c, ' '$WORK/fp32_1f1b_true/stage0.c' && grep -q 'wf_recv(c, wf_pipe_slice(c, ' '$s1'"
check "one wf_pipe_gather per receive (2 microbatches: 2 on each stage)" \
  bash -c "test \$(grep -c 'wf_pipe_gather(c, ' '$s1') = 2 && test \$(grep -c 'wf_pipe_gather(c, ' '$WORK/fp32_1f1b_true/stage0.c') = 2"
check "whole messages: no slices, no gathers" bash -c "! grep -q 'wf_pipe_' '$WORK/fp32_1f1b_false/stage1.c'"
wire() {  # wire ROW [--set ...]: weft check's bytes for one row, "inside a node | across nodes"
  local row=$1; shift
  "$WEFT" check plans/tiny.lua "${small[@]}" "$@" |
    sed -n "s/^  $row  *\([0-9.]* [KMG]*i*B\)  *\([0-9.]* [KMG]*i*B\).*/\1 | \2/p"
}
check "weft check: pp 1.00 MiB per step across nodes with whole messages" \
  test "$(wire pp --set pipeline.scatter_gather=false)" = "0 B | 1.00 MiB"
check "weft check: pp 512.00 KiB per step across nodes with scatter/gather (/ tp)" test "$(wire pp)" = "0 B | 512.00 KiB"
check "weft check: and 512.00 KiB of all-gathers inside the nodes (tp groups)" \
  test "$(wire 'pp gather')" = "512.00 KiB | 0 B"
check "weft inspect: a message is this tp rank's half" \
  bash -c "'$WEFT' inspect plans/tiny.lua ${small[*]} | grep -q 'fp32 65536 bytes: this tp rank.s 1/2 slice of 131072'"
check "weft inspect: the GATHER and its bytes" \
  bash -c "'$WEFT' inspect plans/tiny.lua ${small[*]} | grep -q 'GATHER ACT m0 c1 over tp group 1  \[fp32 131072 bytes all-gathered'"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
