#!/usr/bin/env bash
# PipeDream-2BW: weights updated with a one-step delay, W(t+1) = W(t) -
# lr * update(gradient at W(t-1)), two weight versions kept.  Two runs are
# identical; the loss falls on synthetic data; and the pipelined run (pp = 2)
# matches a single-rank run that applies each gradient one step late.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
set=(--set model.layers=4 --set model.hidden=64 --set model.seq=64 --set data.train="$DATA"
     --set batch.micro=4 --set batch.global=16 --set mesh.dp=1 --set train.steps=60
     --set pipeline.schedule=pipedream-2bw)
build_plan pp2 "$PLAN" "${set[@]}" --set mesh.pp=2
build_plan ref "$PLAN" "${set[@]}" --set mesh.pp=1
build_plan sync "$PLAN" "${set[@]}" --set mesh.pp=1 --set pipeline.schedule=1f1b
run_plan pp2 --steps 10 --metrics "$WORK/a.jsonl" --save "$WORK/a" >/dev/null
run_plan pp2 --steps 10 --metrics "$WORK/b.jsonl" --save "$WORK/b" >/dev/null
run_plan ref --steps 10 --metrics "$WORK/ref.jsonl" --save "$WORK/ref" >/dev/null
run_plan sync --steps 10 --metrics "$WORK/sync.jsonl" >/dev/null
strip() { sed 's/, "ms".*//' "$1"; }
check "two runs give identical losses" cmp -s <(strip "$WORK/a.jsonl") <(strip "$WORK/b.jsonl")
check "two runs give bit-identical weights" "$WEFT" ckpt diff "$WORK/a/model.safetensors" "$WORK/b/model.safetensors"
check "matches the single-rank one-step-late reference: losses" same_field loss "$WORK/ref.jsonl" "$WORK/a.jsonl" 2e-6
check "matches the single-rank one-step-late reference: weights" \
  "$WEFT" ckpt diff "$WORK/ref/model.safetensors" "$WORK/a/model.safetensors" --tol 5e-5 --atol 1e-5
# The delay is real: step 2 still computes on the initial weights, so its
# loss differs from the synchronous run's step 2 (which saw one update).
step2() { sed -n 2p "$1" | sed 's/.*"loss": \([^,]*\),.*/\1/'; }
check "step 2 runs on the initial weights (differs from synchronous)" \
  test "$(step2 "$WORK/a.jsonl")" != "$(step2 "$WORK/sync.jsonl")"
run_plan pp2 --metrics "$WORK/long.jsonl" >/dev/null
first=$(sed -n 1p "$WORK/long.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(tail -n 1 "$WORK/long.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
check "loss falls over 60 steps ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1.0) }'
echo "$passed passed, $failed failed"
[ $failed = 0 ]
