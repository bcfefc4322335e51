#!/usr/bin/env bash
# PipeDream-2BW without a pipeline flush: weights updated with a one-step
# delay, V(b+2) = V(b+1) - lr * update(gradient of batch b at V(b)), two
# weight versions kept, batch b+1's first forwards running while batch b
# drains.  Two runs are identical; the loss falls on synthetic data; pp = 2,
# pp = 4 and dp 2 x pp 2 match a single-rank run that applies each gradient one
# step late, and so does dp 2 x pp 2 under ZeRO-1 (each rank updates its shard
# of the new version and all-gathers the rest; the version being computed
# with stays whole) and ZeRO-2 (gradients reduce-scattered every microbatch
# into a float shard; the tied wte's exchange sends a shard) and ZeRO-3 (each
# weight version a parameter shard, gathered when used; the tied wte's
# weights travel shard to shard); checkpoints (taken after the epilogue drains the pipeline) change
# nothing and a resume continues identically; bf16 composes with it; and the schedule has no flush,
# both as compiled (`weft inspect`) and as run (--trace).
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
M=4  # microbatches per step
set=(--set model.layers=4 --set model.hidden=64 --set model.seq=64 --set data.train="$DATA"
     --set batch.micro=4 --set batch.global=16 --set mesh.dp=1 --set train.steps=60
     --set pipeline.schedule=pipedream-2bw --set clip_grad_norm=0)
build_plan pp2 "$PLAN" "${set[@]}" --set mesh.pp=2
build_plan pp4 "$PLAN" "${set[@]}" --set mesh.pp=4 --set train.ckpt_every=4
build_plan dp2pp2 "$PLAN" "${set[@]}" --set mesh.pp=2 --set mesh.dp=2
build_plan z1dp2pp2 "$PLAN" "${set[@]}" --set mesh.pp=2 --set mesh.dp=2 --set zero=1
build_plan z2dp2pp2 "$PLAN" "${set[@]}" --set mesh.pp=2 --set mesh.dp=2 --set zero=2
build_plan z3dp2pp2 "$PLAN" "${set[@]}" --set mesh.pp=2 --set mesh.dp=2 --set zero=3
# one stage: optim.c's delayed update, whose newest version is gathered (a
# gather of the other version left it stale outside each rank's shards, as
# its checkpoint showed, though the losses were right)
build_plan z2dp2pp1 "$PLAN" "${set[@]}" --set mesh.pp=1 --set mesh.dp=2 --set zero=2
# ... and under ZeRO-3, whose two versions are shards (optim.c's copy, then
# AdamW on the newer shard), here both in the host arena (offload.params);
# its run writes a step-8 checkpoint on its way (a resume below)
build_plan z3dp2pp1 "$PLAN" "${set[@]}" --set mesh.pp=1 --set mesh.dp=2 --set zero=3 --set offload.params=cpu \
  --set train.ckpt_every=8
build_plan ref "$PLAN" "${set[@]}" --set mesh.pp=1
build_plan sync "$PLAN" "${set[@]}" --set mesh.pp=1 --set pipeline.schedule=1f1b
run_plan pp2 --steps 10 --metrics "$WORK/a.jsonl" --save "$WORK/a" >/dev/null
run_plan pp2 --steps 10 --metrics "$WORK/b.jsonl" --save "$WORK/b" >/dev/null
run_plan ref --steps 0 --save "$WORK/ref_init" >/dev/null  # the common initial weights
[ -n "${WEFT_SNAPSHOT:-}" ] || cp "$WORK/ref/stage0.c" "$WORK/ref_program.c"  # betas (weights_match reads them)
run_plan ref --steps 10 --metrics "$WORK/ref.jsonl" --save "$WORK/ref.ckpt" >/dev/null
run_plan sync --steps 10 --metrics "$WORK/sync.jsonl" >/dev/null
strip() { sed 's/, "ms".*//' "$1"; }
check "two runs give identical losses" cmp -s <(strip "$WORK/a.jsonl") <(strip "$WORK/b.jsonl")
check "two runs give bit-identical weights" "$WEFT" ckpt diff "$WORK/a/model.safetensors" "$WORK/b/model.safetensors"
steps_in_order() { awk '{ sub(/.*"step": /, ""); sub(/,.*/, ""); if ($0 + 0 != NR) exit 1 } END { exit NR != 10 }' "$1"; }
check "metrics: one line per step, in order (logged one step late)" steps_in_order "$WORK/a.jsonl"
for layout in pp2 pp4 dp2pp2 z1dp2pp2 z2dp2pp2 z2dp2pp1 z3dp2pp2 z3dp2pp1; do
  if [ $layout != pp2 ]; then
    more=()
    if [ $layout = z3dp2pp1 ]; then more=(--ckpt "$WORK/z3dp2pp1_8"); fi
    run_plan $layout --steps 10 --metrics "$WORK/$layout.jsonl" --save "$WORK/out_$layout" "${more[@]}" >/dev/null
  else
    cp "$WORK/a.jsonl" "$WORK/pp2.jsonl"; cp -r "$WORK/a" "$WORK/out_pp2"
  fi
  check "$layout matches the single-rank one-step-late reference: losses" \
    same_field loss "$WORK/ref.jsonl" "$WORK/$layout.jsonl" 2e-6
  check "$layout matches the single-rank one-step-late reference: grad norms" \
    same_field grad_norm "$WORK/ref.jsonl" "$WORK/$layout.jsonl" 2e-5
  # tolerances derived in lib.sh (weights_match), as in equivalence.sh
  w=$(weights_match "$WORK/ref.ckpt/model.safetensors" "$WORK/out_$layout/model.safetensors" \
      "$WORK/ref_init/model.safetensors" "$WORK/ref_program.c" "$WORK/ref.jsonl" $((16 * 64))) && ok=1 || ok=0
  check "$layout matches the single-rank one-step-late reference: weights ($w)" [ $ok = 1 ]
done
# ZeRO-3's fp32 versions are saved whole from their shards (model: the
# newest; optimizer's delayed.*: the one the next batch computes on) and a
# resume keeps each rank's part of each: resumed from step 8, z3dp2pp1 ends
# where its straight run did, both versions and the moments bit for bit.
run_plan z3dp2pp1 --steps 10 --resume "$WORK/z3dp2pp1_8" --save "$WORK/z3dp2pp1_resumed" >/dev/null
check "z3dp2pp1 (fp32 version shards, offloaded): resume from step 8 continues identically: both versions, moments" \
  eval '"$WEFT" ckpt diff "$WORK/out_z3dp2pp1/model.safetensors" "$WORK/z3dp2pp1_resumed/model.safetensors" &&
        "$WEFT" ckpt diff "$WORK/out_z3dp2pp1/optimizer.safetensors" "$WORK/z3dp2pp1_resumed/optimizer.safetensors"'
# bf16 (16-bit storage, fp32 masters) composes with the two weight versions:
# pp = 2 matches the single-rank bf16 reference (tolerance as precision.sh's).
build_plan pp2_bf16 "$PLAN" "${set[@]}" --set mesh.pp=2 --set precision=bf16
build_plan ref_bf16 "$PLAN" "${set[@]}" --set mesh.pp=1 --set precision=bf16
run_plan pp2_bf16 --steps 10 --metrics "$WORK/pp2_bf16.jsonl" --save "$WORK/bf16_straight" >/dev/null
run_plan ref_bf16 --steps 10 --metrics "$WORK/ref_bf16.jsonl" >/dev/null
check "bf16 pp2 matches the single-rank bf16 one-step-late reference: losses" \
  same_field loss "$WORK/ref_bf16.jsonl" "$WORK/pp2_bf16.jsonl" 1e-4
# ... and a bf16 resume continues bit for bit: the fp32 master is the newest
# version, both 16-bit working copies are restored.
run_plan pp2_bf16 --steps 8 --save "$WORK/bf16_8" >/dev/null
run_plan pp2_bf16 --steps 10 --resume "$WORK/bf16_8" --save "$WORK/bf16_resumed" >/dev/null
check "bf16 resume from step 8 continues identically: weights" \
  "$WEFT" ckpt diff "$WORK/bf16_straight/model.safetensors" "$WORK/bf16_resumed/model.safetensors"
# ... and under ZeRO-1 (dp 2 x pp 2), where each rank's master is its shard
# of the newest version.  (Here and below one run writes the step-8
# checkpoint on its way: checkpoints change nothing, as pp4 shows below.)
build_plan z1_bf16 "$PLAN" "${set[@]}" --set mesh.pp=2 --set mesh.dp=2 --set zero=1 --set precision=bf16 \
  --set train.ckpt_every=8
run_plan z1_bf16 --steps 10 --save "$WORK/z1_bf16_straight" --ckpt "$WORK/z1_bf16_8" >/dev/null
run_plan z1_bf16 --steps 10 --resume "$WORK/z1_bf16_8" --save "$WORK/z1_bf16_resumed" >/dev/null
check "bf16 under ZeRO-1: resume from step 8 continues identically: weights" \
  "$WEFT" ckpt diff "$WORK/z1_bf16_straight/model.safetensors" "$WORK/z1_bf16_resumed/model.safetensors"
# ... and under ZeRO-2 with 16-bit gradients (WEFT_GRAD16=1: its bucket
# buffers in 2 bytes even where this tiny plan's staging outweighs them),
# whose float shard starts each step from zero: nothing of it is saved
WEFT_GRAD16=1 build_plan z2_bf16 "$PLAN" "${set[@]}" --set mesh.pp=2 --set mesh.dp=2 --set zero=2 --set precision=bf16 \
  --set train.ckpt_every=8
check "bf16 under ZeRO-2 stores 16-bit gradients" grep -q '\.grad16 = 1' "$WORK/z2_bf16/stage0.c"
run_plan z2_bf16 --steps 10 --save "$WORK/z2_bf16_straight" --ckpt "$WORK/z2_bf16_8" >/dev/null
run_plan z2_bf16 --steps 10 --resume "$WORK/z2_bf16_8" --save "$WORK/z2_bf16_resumed" >/dev/null
check "bf16 under ZeRO-2: resume from step 8 continues identically: weights" \
  "$WEFT" ckpt diff "$WORK/z2_bf16_straight/model.safetensors" "$WORK/z2_bf16_resumed/model.safetensors"
# ... and under ZeRO-3, whose two versions are 16-bit parameter shards: the
# checkpoint holds the newest version (the fp32 masters) and the older one
# (delayed.*, gathered from its shards), and a resume narrows each into its
# shard.
WEFT_GRAD16=1 build_plan z3_bf16 "$PLAN" "${set[@]}" --set mesh.pp=2 --set mesh.dp=2 --set zero=3 --set precision=bf16 \
  --set train.ckpt_every=8
check "bf16 under ZeRO-3 stores 16-bit parameter shards" grep -q '\.param16 = 1' "$WORK/z3_bf16/stage0.c"
check "bf16 under ZeRO-3 stores 16-bit gradients" grep -q '\.grad16 = 1' "$WORK/z3_bf16/stage0.c"
run_plan z3_bf16 --steps 10 --metrics "$WORK/z3_bf16.jsonl" --save "$WORK/z3_bf16_straight" --ckpt "$WORK/z3_bf16_8" >/dev/null
run_plan z3_bf16 --steps 10 --resume "$WORK/z3_bf16_8" --save "$WORK/z3_bf16_resumed" >/dev/null
check "bf16 under ZeRO-3: resume from step 8 continues identically: weights" \
  "$WEFT" ckpt diff "$WORK/z3_bf16_straight/model.safetensors" "$WORK/z3_bf16_resumed/model.safetensors"
# The delay is real: step 2 still computes on the initial weights, so its
# loss differs from the synchronous run's step 2 (which saw one update).
step2() { sed -n 2p "$1" | sed 's/.*"loss": \([^,]*\),.*/\1/'; }
check "step 2 runs on the initial weights (differs from synchronous)" \
  test "$(step2 "$WORK/a.jsonl")" != "$(step2 "$WORK/sync.jsonl")"

# Checkpoints every 4 steps: the epilogue drains the pipeline before each and
# the prologue refills it; nothing changes, and a resume from step 8 continues
# bit for bit (both weight versions are saved).
run_plan pp4 --steps 10 --metrics "$WORK/ck.jsonl" --save "$WORK/ck" --ckpt "$WORK/ckpt" >/dev/null
check "checkpointing every 4 steps changes no loss" cmp -s <(strip "$WORK/pp4.jsonl") <(strip "$WORK/ck.jsonl")
check "checkpointing every 4 steps changes no weight" "$WEFT" ckpt diff "$WORK/out_pp4/model.safetensors" "$WORK/ck/model.safetensors"
head -n 8 "$WORK/ck.jsonl" >"$WORK/res.jsonl"
run_plan pp4 --steps 10 --resume "$WORK/ckpt" --metrics "$WORK/res.jsonl" --save "$WORK/res" >/dev/null
check "resume from the step-8 checkpoint continues identically: losses" \
  cmp -s <(strip "$WORK/pp4.jsonl") <(strip "$WORK/res.jsonl")
check "resume from the step-8 checkpoint continues identically: weights" \
  "$WEFT" ckpt diff "$WORK/out_pp4/model.safetensors" "$WORK/res/model.safetensors"

# No flush, as compiled: in the unit-cost timeline stage 0 runs batch 1's
# first forward (F$M) before batch 0's last backward (B$((M - 1))), and the
# steady state has no bubble.  (1f1b's own timeline has no F$M at all.)
"$WEFT" inspect "$PLAN" "${set[@]}" --set mesh.pp=2 >"$WORK/inspect.txt"
before() {  # before ROW A B: cell A comes before the last cell B in the timeline row
  grep "^$1 |" "$WORK/inspect.txt" | tr -s ' ' '\n' | awk -v a="$2" -v b="$3" '
    $0 == a && !fa { fa = NR } $0 == b { lb = NR } END { exit !(fa && lb && fa < lb) }'
}
check "inspect: stage 0 runs F$M (batch 1) before B$((M - 1)) (batch 0's last backward)" before "stage 0" "F$M" "B$((M - 1))"
check "inspect: steady-state bubble 0" grep -q "steady-state bubble 0.0000" "$WORK/inspect.txt"
check "the steady step's C runs batch 2's forward before batch 1's last backward" \
  awk -v f="fwd_c0(c, $((2 * M))," -v b="bwd_c0(c, $((2 * M - 1))," '
    /^static void step\(/ { on = 1 } /^}/ { on = 0 }
    on && index($0, f) && !sf { sf = NR } on && index($0, b) { sb = NR }
    END { exit !(sf && sb && sf < sb) }' "$WORK/pp2/stage0.c"

# No flush, as run: stage 0's forward of batch 1 starts before the last stage
# has finished batch 0: before its send of batch 0's last input gradient
# completes (a rendezvous with stage 0's receive that follows that forward;
# with a flush the forward would come after it).
run_plan pp2 --steps 3 --trace "$WORK/trace.json" >/dev/null
event() {  # event NAME PID start|end
  awk -v name="\"name\":\"$1\"" -v pid="\"pid\":$2," -v which="$3" '
    index($0, name) && index($0, pid) {
      ts = $0; sub(/.*"ts":/, "", ts); sub(/,.*/, "", ts)
      dur = $0; sub(/.*"dur":/, "", dur); sub(/,.*/, "", dur)
      print which == "start" ? ts : ts + dur; exit }' "$WORK/trace.json"
}
f0=$(event "F$M" 0 start) g1=$(event "send grad m$((M - 1))" 1 end)
check "trace: stage 0 starts F$M at $f0 us, before the last stage's batch 0 ends at $g1 us" \
  awk -v a="$f0" -v b="$g1" 'BEGIN { exit !(a != "" && b != "" && a + 0 < b + 0) }'
check "trace: stage 0 runs F$M before its own B$((M - 1))" \
  awk -v a="$f0" -v b="$(event "B$((M - 1))" 0 start)" 'BEGIN { exit !(a != "" && b != "" && a + 0 < b + 0) }'

# Staged sends (emit_step.c's staged_sends; memory_slot.c): a stage's output
# waits for its send in a staging buffer, not in its slot, in every list (the
# prologue, the steady step, the epilogue: schedule_2bw.c refuses a forward
# whose send falls in another list); the runs above are the proof that the
# messages still carry the right values, and rank 0 allocates what the plan
# (slots without the output) says.
check "stage 0 stages each output for its send in the prologue, the steady step and the epilogue" \
  test "$(awk '/^static void (prologue|step|epilogue)\(/ { f = $3 } /wf_copy\(wf_recv_buffer/ { seen[f] = 1 }
              END { print length(seen) }' "$WORK/pp2/stage0.c")" = 3
planned_exactly() {  # planned_exactly METRICS: rank 0's arenas are what memory.c planned
  awk '{ match($0, /"mem_bytes": [0-9]+/); a = substr($0, RSTART + 13, RLENGTH - 13)
         match($0, /"mem_planned_bytes": [0-9]+/); p = substr($0, RSTART + 21, RLENGTH - 21)
         if (!(p > 0 && a == p)) bad = 1 } END { exit bad }' "$1"
}
# (ZeRO-3: two parameter shards, one per weight version, and no whole version)
for layout in pp2 z3dp2pp2 z3dp2pp1 z3_bf16; do
  check "$layout: rank 0 allocated what memory.c planned, to the byte" planned_exactly "$WORK/$layout.jsonl"
done
run_plan pp2 --metrics "$WORK/long.jsonl" >/dev/null
first=$(sed -n 1p "$WORK/long.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
last=$(tail -n 1 "$WORK/long.jsonl" | sed 's/.*"loss": \([^,]*\),.*/\1/')
check "loss falls over 60 steps ($first -> $last)" awk -v a="$first" -v b="$last" 'BEGIN { exit !(b < a - 1.0) }'
echo "$passed passed, $failed failed"
[ $failed = 0 ]
