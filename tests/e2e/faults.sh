#!/usr/bin/env bash
# Faults end the job, named, and preemption loses nothing:
#  - a rank killed (kill -9) or stopped (SIGSTOP) ends a 4-rank job, dp 2 x
#    pp 2 and pp 4, by itself within 30 s (fault.timeout_s = 3: a peer's
#    watchdog names its rank, the instruction and the peer), and leaves no
#    process behind;
#  - a FIFO as --data is refused at open (it used to hang), a data file
#    truncated while training ends the job with a message naming it (it
#    used to die in SIGBUS);
#  - SIGTERM to every rank (as Slurm sends it) finishes the step, saves a
#    checkpoint and exits 75; the same command with --resume auto continues
#    and ends with weights, optimizer state and losses identical, bit for
#    bit, to a straight run; SIGUSR1 to mpirun (which forwards it) does the
#    same for a PipeDream-2BW pipeline, which drains before it saves.
source "$(dirname "$0")/lib.sh"
PLAN=${PLAN:-plans/tiny.lua}
DATA=$(make_data)
set=(--set data.train="$DATA" --set model.layers=4 --set model.hidden=32 --set model.heads=2
     --set model.seq=32 --set batch.micro=2 --set batch.global=8 --set train.steps=1000)
build_plan dppp "$PLAN" "${set[@]}" --set mesh.dp=2 --set mesh.pp=2 --set fault.timeout_s=3
build_plan pp "$PLAN" "${set[@]}" --set mesh.dp=1 --set mesh.pp=4
build_plan twobw "$PLAN" "${set[@]}" --set mesh.dp=1 --set mesh.pp=2 --set pipeline.schedule=pipedream-2bw \
  --set clip_grad_norm=0

ranks() { pgrep -f "^$WORK/$1/build/stage" || true; }  # the job's ranks (not mpirun, whose line names them too)
rank_pid() {  # rank_pid LAYOUT R: the process of world rank R
  local pid
  for pid in $(ranks "$1"); do
    if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -qx "OMPI_COMM_WORLD_RANK=$2"; then
      echo "$pid"; return; fi
  done
}
wait_for_steps() {  # wait_for_steps FILE N: until the metrics file holds N steps (60 s at most)
  local i
  for i in $(seq 600); do
    [ -f "$1" ] && [ "$(wc -l <"$1")" -ge "$2" ] && return 0
    sleep 0.1
  done
  return 1
}

# fault LAYOUT RANK SIGNAL PATTERN [options]: starts a long run, sends SIGNAL
# to world rank RANK once it trains; the job must end by itself within 30 s,
# non-zero, with PATTERN in its output and none of its processes left.
fault() {
  local layout=$1 rank=$2 sig=$3 pattern=$4 name="$1: rank $2 gets SIG$3"; shift 4
  local out=$WORK/$layout.$sig.log metrics=$WORK/$layout.$sig.jsonl
  "$WORK/$layout/launch.sh" --quiet --metrics "$metrics" "$@" >"$out" 2>&1 &
  local job=$!
  if ! wait_for_steps "$metrics" 2; then
    check "$name: job started training" false; kill -9 "$job" 2>/dev/null || true; return
  fi
  local pid
  pid=$(rank_pid "$layout" "$rank")
  check "$name: rank $rank found" test -n "$pid"
  [ -z "$pid" ] || kill -"$sig" "$pid"
  local rc=0 i
  for i in $(seq 300); do kill -0 "$job" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$job" 2>/dev/null; then  # still running after 30 s: a hang
    check "$name: job ended within 30 s" false
    pkill -9 -f "$WORK/$layout/build/stage" 2>/dev/null || true; wait "$job" 2>/dev/null || true; return
  fi
  wait "$job" || rc=$?
  check "$name: job ended within 30 s, non-zero (exit $rc)" test "$rc" -ne 0
  sleep 0.5  # mpirun has returned: any rank still here is left behind
  check "$name: no process left" test -z "$(ranks "$layout")"
  if grep -qE -- "$pattern" "$out"; then
    check "$name: named ($(grep -m1 -oE -- "$pattern" "$out"))" true
  else
    check "$name: named (/$pattern/)" false; tail -n 5 "$out"
  fi
}
WD='rank [0-9]+: watchdog: waited [0-9.]+ s \(fault.timeout_s = 3\) in '
fault dppp 1 KILL 'process rank 1 with PID [0-9]+ .*(signal 9|Killed)'
fault dppp 3 STOP "${WD}.*((send|recv) (act|grad) m=[0-9]+ chunk=[0-9]+ (to|from) rank 3|(all-reduce|bucket [0-9]+ [a-z-]+) over the (dp|pp) group \(ranks [0-9, ]*3)"
fault pp 2 KILL 'process rank 2 with PID [0-9]+ .*(signal 9|Killed)' --fault-timeout 3
fault pp 2 STOP "${WD}.*((send|recv) (act|grad) m=[0-9]+ chunk=[0-9]+ (to|from) rank 2|all-reduce over the pp group \(ranks 0, 1, 2, 3)" \
  --fault-timeout 3

# Data: a FIFO is refused at open; a file cut short while training is named.
mkfifo "$WORK/fifo.bin"
out=$(timeout 30 "$WORK/dppp/launch.sh" --quiet --steps 1 --data "$WORK/fifo.bin" 2>&1) && rc=0 || rc=$?
check "FIFO as --data refused (exit $rc): $(grep -m1 -o 'data file .*' <<<"$out")" \
  grep -q "wf_data_open failed.*fifo.bin: not a regular file (it is a FIFO" <<<"$out"
cp "$DATA" "$WORK/cut.bin"
"$WORK/dppp/launch.sh" --quiet --data "$WORK/cut.bin" --metrics "$WORK/cut.jsonl" >"$WORK/cut.log" 2>&1 &
job=$!
wait_for_steps "$WORK/cut.jsonl" 2 && truncate -s 2048 "$WORK/cut.bin"
rc=0; wait "$job" || rc=$?
check "data truncated mid-run: exit $rc, $(grep -m1 -o 'data file .*' "$WORK/cut.log" | cut -c1-90)..." \
  grep -q "rank [0-9]: wf_data_sample failed .*data file $WORK/cut.bin: truncated while in use" "$WORK/cut.log"
check "data truncated mid-run: no SIGBUS (exit $rc)" \
  bash -c "test $rc -ne $((128 + 7)) && ! grep -qE 'SIGBUS|Bus error' '$WORK/cut.log'"

# Preemption: SIGTERM to every rank mid-run -> checkpoint + exit 75 ->
# --resume auto -> equal to the straight run, bit for bit.
preempt() {  # preempt LAYOUT NAME SIGNAL TARGET(ranks|mpirun)
  local layout=$1 name=$2 sig=$3 target=$4 ck=$WORK/$2.ck
  "$WORK/$layout/launch.sh" --quiet --ckpt "$ck" --resume auto --save "$WORK/$name.final" \
    --metrics "$WORK/$name.jsonl" >"$WORK/$name.log" 2>&1 &
  local job=$! rc=0
  if wait_for_steps "$WORK/$name.jsonl" 1; then
    if [ "$target" = ranks ]; then kill -"$sig" $(ranks "$layout") || true; else kill -"$sig" "$job" || true; fi
  fi
  wait "$job" || rc=$?
  local k
  k=$(sed -n 's/.*preempted: signal [0-9]* ([A-Z0-9]*) at step \([0-9]*\) of.*/\1/p' "$WORK/$name.log")
  check "$name: SIG$sig to $target -> exit 75 (got $rc), checkpoint at step ${k:-?}" \
    test "$rc" = 75 -a -n "$k" -a \( -f "$ck/model.safetensors" -o -f "$ck/model.safetensors.index.json" \)
  [ -n "$k" ] || { tail -n 5 "$WORK/$name.log"; return; }
  local n=$((k + 3))
  run_plan "$layout" --steps $n --ckpt "$ck" --resume auto --save "$WORK/$name.final" \
    --metrics "$WORK/$name.jsonl" >"$WORK/$name.resumed.log" 2>&1 && rc=0 || rc=$?
  check "$name: --resume auto ran to step $n (exit $rc)" test "$rc" = 0
  run_plan "$layout" --steps $n --save "$WORK/$name.straight" --metrics "$WORK/$name.straight.jsonl" >/dev/null || true
  check "$name: weights bit for bit equal to the straight run" \
    "$WEFT" ckpt diff "$WORK/$name.straight/model.safetensors" "$WORK/$name.final/model.safetensors"
  check "$name: optimizer state bit for bit equal" \
    "$WEFT" ckpt diff "$WORK/$name.straight/optimizer.safetensors" "$WORK/$name.final/optimizer.safetensors"
  check "$name: the same losses at all $n steps" cmp -s \
    <(sed 's/, "ms".*//' "$WORK/$name.straight.jsonl") <(sed 's/, "ms".*//' "$WORK/$name.jsonl")
}
preempt dppp term TERM ranks
preempt twobw usr1 USR1 mpirun  # PipeDream-2BW: drains its pipeline to stop

# --resume auto: the newest of several checkpoints (a --keep folder of
# step_N checkpoints, ckpt.c's rotation layout, chosen by step); one it
# cannot read is refused, naming it, rather than started over.
k=$(sed -n 's/.*at step \([0-9]*\) of.*/\1/p' "$WORK/term.log")
mkdir -p "$WORK/multi"
: >"$WORK/multi/.weft-checkpoints"   # the set's marker (ckpt_folder.h)
cp -r "$WORK/term.ck" "$WORK/multi/step_$(printf %08d "$k")"
cp -r "$WORK/term.final" "$WORK/multi/step_$(printf %08d $((k + 3)))"
out=$("$WORK/dppp/launch.sh" --steps $((k + 3)) --ckpt "$WORK/multi" --keep 3 --resume auto 2>&1) || true
check "--resume auto picks the newest subfolder checkpoint" \
  grep -q "resume auto: newest checkpoint is $WORK/multi/step_$(printf %08d $((k + 3))) (step $((k + 3)))" <<<"$out"
cp -r "$WORK/term.ck" "$WORK/broken"
# (dppp has pp 2: a Hugging Face sharded checkpoint, its second shard cut short)
head -c 300 "$WORK/term.ck/model-00002-of-00002.safetensors" >"$WORK/broken/model-00002-of-00002.safetensors"
out=$(timeout 30 "$WORK/dppp/launch.sh" --quiet --steps 1 --ckpt "$WORK/broken" --resume auto 2>&1) && rc=0 || rc=$?
check "--resume auto refuses an unreadable checkpoint (exit $rc)" \
  grep -q "rank 0: wf_resume_auto failed.*broken/model-00002-of-00002.safetensors.*cannot read" <<<"$out"

# --resume auto needs a folder to look in
out=$(timeout 30 "$WORK/dppp/launch.sh" --quiet --steps 1 --resume auto 2>&1) && rc=0 || rc=$?
check "--resume auto without --ckpt / --save refused (exit $rc)" \
  grep -q "options failed.*--resume auto looks for checkpoints in the folder of --ckpt DIR" <<<"$out"

echo "$passed passed, $failed failed"
[ $failed = 0 ]
