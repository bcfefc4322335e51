#!/usr/bin/env bash
# Slurm for real: a one-machine cluster (munged, slurmctld, slurmd started
# here from a generated slurm.conf, stopped on exit) runs the tiny plan's
# job.slurm with sbatch; its losses must equal launch.sh's run of the same
# programs on the same data, bit for bit (same ranks, same kernels).  Also:
# job.slurm refuses an allocation that is not the plan's mesh and names the
# difference, and launch.sh --hostfile refuses a host file with too few slots.
# Installs Debian's slurm-wlm and munge when missing; exits 77 (skipped)
# only when they cannot be installed.
source "$(dirname "$0")/lib.sh"

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge) \
    >"$WORK/apt.log" 2>&1 || { tail -5 "$WORK/apt.log"; echo "skipped: cannot install slurm-wlm and munge"; exit 77; }
fi

# ---- the cluster: one node, this machine, everything under $WORK/slurm ----
S=$WORK/slurm
mkdir -p "$S/munge" "$S/state" "$S/spool" "$S/log"
chmod 700 "$S/munge"
head -c 128 /dev/urandom >"$S/munge/key"
chmod 600 "$S/munge/key"
host=$(hostname -s)
port=$((20000 + RANDOM % 20000))   # two ports, away from a real cluster's 6817/6818
cat >"$S/slurm.conf" <<EOF
ClusterName=weft-test
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$S/munge/sock
CredType=cred/munge
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$S/state
SlurmdSpoolDir=$S/spool
SlurmctldPidFile=$S/slurmctld.pid
SlurmdPidFile=$S/slurmd.pid
SlurmctldLogFile=$S/log/slurmctld.log
SlurmdLogFile=$S/log/slurmd.log
# 4 CPUs claimed on any machine (config_overrides), so a 2-rank job fits on one core too
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobRequeue=1
NodeName=$host CPUs=4 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=1000 State=UNKNOWN
PartitionName=weft Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$S/slurm.conf
stop_cluster() {
  scontrol shutdown >/dev/null 2>&1 || true
  for f in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/pid"; do
    [ -f "$f" ] && kill "$(cat "$f")" 2>/dev/null || true
  done
  sleep 1
  for f in "$S/slurmd.pid" "$S/slurmctld.pid" "$S/munge/pid"; do
    [ -f "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null || true
  done
  [ -n "${KEEP:-}" ] || rm -rf "$WORK"
}
trap stop_cluster EXIT
munged --force --key-file="$S/munge/key" --socket="$S/munge/sock" --pid-file="$S/munge/pid" \
  --log-file="$S/log/munged.log" --seed-file="$S/munge/seed"
slurmctld -c
slurmd -c
for _ in $(seq 50); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 0.2
done
check "the one-node cluster is up" bash -c "sinfo -h -o %t | grep -q idle"

# ---- the plan: launch.sh's run, then sbatch's ----
DATA=$(make_data)
build_plan tiny plans/tiny.lua
run_plan tiny --steps 4 --data "$DATA" --metrics "$WORK/launch.jsonl" >/dev/null
check "job.slurm is written beside launch.sh" test -x "$WORK/tiny/job.slurm"
check "job.slurm asks for the plan's ranks and requeue" \
  grep -q -- "--ntasks=2" "$WORK/tiny/job.slurm"

# sbatch --wait returns the job's exit code
sbatch --wait --chdir="$WORK" -o "$WORK/job.out" "$WORK/tiny/job.slurm" \
  --steps 4 --data "$DATA" --metrics "$WORK/slurm.jsonl" --quiet >/dev/null 2>"$WORK/sbatch.err"
check "sbatch ran job.slurm to the end" test -s "$WORK/slurm.jsonl"
check "Slurm's losses equal launch.sh's, bit for bit" same_field loss "$WORK/launch.jsonl" "$WORK/slurm.jsonl" 0
check "Slurm's gradient norms equal launch.sh's" same_field grad_norm "$WORK/launch.jsonl" "$WORK/slurm.jsonl" 0
check "each rank has its own log" test -f "$(ls -d "$WORK"/tiny/weft-logs/*.0/ | head -1)rank1.log"

# an allocation that is not the plan's: refused before anything starts
sbatch --wait --chdir="$WORK" -o "$WORK/bad.out" --ntasks=1 --ntasks-per-node=1 "$WORK/tiny/job.slurm" \
  --steps 1 --data "$DATA" --metrics "$WORK/bad.jsonl" >/dev/null 2>&1 && bad_rc=0 || bad_rc=$?
check "a 1-task allocation is refused (exit 1)" test "$bad_rc" = 1
check "the refusal names the tasks the plan needs" grep -q "tasks: the plan needs 2 .* has 1" "$WORK/bad.out"
check "nothing ran under the wrong allocation" test ! -e "$WORK/bad.jsonl"

# launch.sh --hostfile: too few slots refused, enough slots run
printf '# one host\nlocalhost slots=1\n' >"$WORK/hosts1"
"$WORK/tiny/launch.sh" --hostfile "$WORK/hosts1" --steps 1 --data "$DATA" >"$WORK/h1.out" 2>&1 && h_rc=0 || h_rc=$?
check "a host file with 1 slot is refused for 2 ranks" test "$h_rc" = 1
check "the refusal says the slots and the ranks" grep -q "has 1 slot(s); plan tiny needs 2 ranks" "$WORK/h1.out"
printf 'localhost slots=2\n' >"$WORK/hosts2"
"$WORK/tiny/launch.sh" --hostfile "$WORK/hosts2" --steps 4 --data "$DATA" --quiet \
  --metrics "$WORK/hosts.jsonl" >/dev/null 2>&1
check "launch.sh --hostfile runs the plan: same losses" same_field loss "$WORK/launch.jsonl" "$WORK/hosts.jsonl" 0

# ---- preemption through Slurm: scancel --signal=USR1 reaches every rank,
# which finish the step, save into --ckpt and exit 75; job.slurm requeues
# the job, and the requeued run resumes (--resume auto) and ends with the
# same weights as an uninterrupted run, bit for bit ----
run_plan tiny --steps 12 --data "$DATA" --save "$WORK/straight.ckpt" >/dev/null
jobid=$(sbatch --parsable --chdir="$WORK" -o "$WORK/pre.out" "$WORK/tiny/job.slurm" \
  --steps 12 --data "$DATA" --ckpt "$WORK/pre.ckpt" --save "$WORK/pre.final" \
  --metrics "$WORK/pre.jsonl" 2>"$WORK/pre.err")   # not --quiet: the log says where it resumed
for _ in $(seq 300); do  # until the ranks have run 3 steps
  [ "$(wc -l 2>/dev/null <"$WORK/pre.jsonl" || echo 0)" -ge 3 ] && break
  sleep 0.1
done
scancel --signal=USR1 "$jobid"
for _ in $(seq 600); do  # requeued, resumed, finished
  state=$(scontrol show job "$jobid" 2>/dev/null | sed -n 's/.*JobState=\([A-Z_]*\).*/\1/p')
  case "$state" in COMPLETED|FAILED|CANCELLED|TIMEOUT|NODE_FAIL|OUT_OF_MEMORY) break ;; esac
  # Slurm holds a requeued job for a while (its BeginTime); the test need not wait
  # (once the first run's step daemons are gone: their PMIx socket blocks a new step)
  if [ "$state" = PENDING ] && scontrol show job "$jobid" | grep -q "Reason=BeginTime" &&
     ! pgrep -f "slurmstepd: \[$jobid\." >/dev/null && [ -z "$(ls "$S/spool" | grep "pmix.$jobid\.")" ]; then
    scontrol update JobId="$jobid" StartTime=now >/dev/null 2>&1 || true
  fi
  sleep 0.2
done
restarts=$(scontrol show job "$jobid" | sed -n 's/.*Restarts=\([0-9]*\).*/\1/p')
check "the preempted job completed after its requeue" test "$state" = COMPLETED
check "Slurm requeued it once" test "${restarts:-0}" = 1
check "the first run said it was preempted and saved" \
  grep -qs "preempted: signal 10 (SIGUSR1)" "$WORK/tiny/weft-logs/$jobid.0/rank0.log"
check "the requeued run resumed from the checkpoint" \
  grep -qs "resumed from $WORK/pre.ckpt" "$WORK/tiny/weft-logs/$jobid.1/rank0.log"
check "preempt -> requeue -> resume ends bit for bit as the straight run" \
  bash -c "'$WEFT' ckpt diff '$WORK/straight.ckpt/model.safetensors' '$WORK/pre.final/model.safetensors' &&
           '$WEFT' ckpt diff '$WORK/straight.ckpt/optimizer.safetensors' '$WORK/pre.final/optimizer.safetensors'"

echo "$passed passed, $failed failed"
[ $failed = 0 ]
