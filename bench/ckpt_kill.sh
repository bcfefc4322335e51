#!/usr/bin/env bash
# ckpt_kill.sh LAUNCH DIR: starts a compiled program that saves a checkpoint
# every step (train.ckpt_every = 1) into DIR, resuming from DIR when it
# exists, and kills the whole job with SIGKILL at a random moment, KILLS
# times (default 20).  After every kill DIR must verify against its manifest
# (`weft ckpt verify`) at a step no older than the last one, no process may be
# left, and leftovers of killed saves must not pile up (the next save removes
# them).  Finally the last checkpoint must resume for one more step.
#   WEFT=build/compiler/weft KILLS=20 bash bench/ckpt_kill.sh generated/x/launch.sh /tmp/ck
set -uo pipefail
LAUNCH=${1:?usage: ckpt_kill.sh LAUNCH DIR}
DIR=${2:?usage: ckpt_kill.sh LAUNCH DIR}
WEFT=${WEFT:?set WEFT to the weft binary}
KILLS=${KILLS:-20}
last=-1 in_save=0
for i in $(seq 1 "$KILLS"); do
  resume=()
  [ -e "$DIR" ] && resume=(--resume "$DIR")
  setsid "$LAUNCH" --quiet --ckpt "$DIR" "${resume[@]}" >/dev/null 2>&1 &
  pid=$!
  disown "$pid"  # killed on purpose: no "Killed" notice from this shell
  sleep "$(awk -v r="$RANDOM" 'BEGIN { printf "%.2f", 1.0 + 2.0 * r / 32768 }')"
  # the job is its own session (setsid): mpirun and the ranks, which Open MPI
  # puts in process groups of their own; SIGKILL to each, by id
  for t in $(seq 1 50); do
    ids=$(pgrep -s "$pid") || break
    kill -9 $ids 2>/dev/null
    sleep 0.1
  done
  if pgrep -s "$pid" >/dev/null; then
    echo "kill $i: FAIL: processes of the job survive SIGKILL: $(pgrep -s "$pid" | tr '\n' ' ')"
    exit 1
  fi
  if [ ! -e "$DIR" ]; then
    echo "kill $i: no checkpoint yet (killed before the first save finished)"
    continue
  fi
  if ! out=$("$WEFT" ckpt verify "$DIR" 2>&1); then
    echo "kill $i: FAIL: $out"
    exit 1
  fi
  step=$(sed -n 's/.*: step \([0-9]*\),.*/\1/p' <<<"$out")
  if [ "$step" -lt "$last" ]; then
    echo "kill $i: FAIL: the checkpoint went back from step $last to $step"
    exit 1
  fi
  left=$(ls -d "$DIR".tmp-* "$DIR".old-* 2>/dev/null | wc -l)
  if [ "$left" -gt 1 ]; then
    echo "kill $i: FAIL: $left leftover folders of killed saves pile up"
    exit 1
  fi
  [ "$left" -gt 0 ] && in_save=$((in_save + 1))
  echo "kill $i: $DIR verifies at step $step ($left leftover of the killed save)"
  last=$step
done
if [ "$last" -ge 0 ]; then
  if ! out=$("$LAUNCH" --quiet --steps $((last + 1)) --resume "$DIR" 2>&1); then
    echo "FAIL: the last checkpoint (step $last) does not resume: $out"
    exit 1
  fi
fi
echo "$KILLS kills ($in_save of them inside a save, leaving its folder): the checkpoint verified after every one, reached step $last and resumed"
