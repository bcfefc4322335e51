#!/usr/bin/env bash
# launch.sh's OpenMP wait policy (compiler/omp_wait.c): a rank of two or
# more threads with a core each spins its idle threads (ACTIVE), ranks that
# share cores sleep them (PASSIVE), a setting of the user's wins, and
# OMP_NUM_THREADS or OPENBLAS_NUM_THREADS of theirs keeps the sleeping
# default; the CUDA backend's launch.sh always sleeps them; job.slurm decides
# as launch.sh on the allocation's CPUs.  The runtime's blas line names the
# policy, and the policy changes no bit of training.
source "$(dirname "$0")/lib.sh"
unset OMP_WAIT_POLICY  # lib.sh's default for the other tests; here launch.sh decides
data=$(make_data)
small=(--set data.train="$data" --set model.layers=1 --set model.hidden=32 --set model.seq=16
       --set train.steps=3 --set train.log_every=1)
build_plan one plans/tiny.lua "${small[@]}" --set mesh.dp=1 --set batch.micro=8
build_plan two plans/tiny.lua "${small[@]}" --set mesh.dp=2 --set batch.micro=4

blas_line() {  # blas_line NAME CPUS [VAR=VALUE ...]: the run's blas line, and its metrics in $WORK/NAME.jsonl
  local name=$1 cpus=$2; shift 2
  env "$@" taskset -c "$cpus" "$WORK/$name/launch.sh" --metrics "$WORK/$name.$cpus.$#.jsonl" >"$WORK/run.log" 2>&1 || true
  grep "^blas:" "$WORK/run.log" | head -1
}

if [ "$(nproc)" -ge 2 ]; then
  two_cpus=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | awk -F- '{ for (c = $1; c <= ($2 == "" ? $1 : $2); c++) print c }' | head -2 | paste -sd,)
  line=$(blas_line one "$two_cpus")
  check "one rank on 2 cores: 2 threads that spin ($line)" \
    grep -q "2 OpenMP thread(s) per rank, GEMMs split over them, idle threads spin (OMP_WAIT_POLICY=ACTIVE)" <<<"$line"
  active=$WORK/one.$two_cpus.0.jsonl
  line=$(blas_line one "$two_cpus" OMP_WAIT_POLICY=passive)
  check "the user's OMP_WAIT_POLICY wins ($line)" grep -q "idle threads sleep (OMP_WAIT_POLICY=passive)" <<<"$line"
  check "spinning or sleeping, the same losses and gradient norms bit for bit" \
    cmp -s <(cut -d, -f1-4 "$active") <(cut -d, -f1-4 "$WORK/one.$two_cpus.1.jsonl")
  line=$(blas_line one "$two_cpus" OMP_NUM_THREADS=2)
  check "the user's OMP_NUM_THREADS keeps them sleeping ($line)" grep -q "idle threads sleep (OMP_WAIT_POLICY=PASSIVE)" <<<"$line"
  line=$(blas_line one "$two_cpus" OPENBLAS_NUM_THREADS=1)
  check "OpenBLAS's own pool beside OpenMP's keeps them sleeping ($line)" \
    grep -q "idle threads sleep (OMP_WAIT_POLICY=PASSIVE)" <<<"$line"
  # two ranks on the same 2 cores: a thread each, nothing idle to spin; the
  # script's choice is PASSIVE (ranks x 2 > cores), seen through sh -x
  policy=$(taskset -c "$two_cpus" sh -x "$WORK/two/launch.sh" --steps 1 2>&1 | sed -n 's/^+ OMP_WAIT_POLICY=//p' | head -1)
  check "two ranks on 2 cores sleep their idle threads (launch.sh chose '$policy')" test "$policy" = PASSIVE
fi
one_cpu=$(taskset -pc $$ | sed 's/.*: //' | tr ',' '\n' | head -1 | cut -d- -f1)
policy=$(taskset -c "$one_cpu" sh -x "$WORK/one/launch.sh" --steps 1 2>&1 | sed -n 's/^+ OMP_WAIT_POLICY=//p' | head -1)
check "one rank on 1 core sleeps them (launch.sh chose '$policy')" test "$policy" = PASSIVE

# a host file: the plan's ranks a node against this machine's cores
"$WEFT" compile plans/tiny.lua -o "$WORK/hosts" "${small[@]}" --set mesh.dp=1 --set batch.micro=8 >/dev/null 2>&1
check "launch.sh takes a host's ranks from the plan under --hostfile" grep -q "^  node_ranks=1 " "$WORK/hosts/launch.sh"

"$WEFT" compile plans/tiny.lua -o "$WORK/cuda" --backend cuda "${small[@]}" --set mesh.dp=1 --set batch.micro=8 >/dev/null 2>&1
check "CUDA's launch.sh sleeps idle threads unless told" \
  grep -qx 'export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}' "$WORK/cuda/launch.sh"
check "... and never spins them" bash -c "! grep -q ACTIVE '$WORK/cuda/launch.sh' '$WORK/cuda/job.slurm'"
check "job.slurm decides on the allocation's CPUs and the plan's ranks a node" \
  grep -q 'if \[ -z "${OMP_NUM_THREADS:-}${OPENBLAS_NUM_THREADS:-}" \] && \[ $((2 \* 1)) -le "${SLURM_CPUS_ON_NODE:-$(nproc)}" \]' \
  "$WORK/one/job.slurm"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
