#!/usr/bin/env bash
# plan.comm and plan.nccl without a GPU: a --backend cuda launch.sh exports the
# plan's NCCL settings (and forwards them with mpirun -x), `weft check` lists
# them, the CPU backend's output does not change with them, and comm = "mpi"
# lets several ranks share one device.
source "$(dirname "$0")/lib.sh"
NCCL=(--set nccl.algo=Ring,Tree --set nccl.proto=^LL128 --set nccl.min_nchannels=4
      --set nccl.max_nchannels=16 --set nccl.debug=WARN --set nccl.ib_disable=true
      --set nccl.socket_ifname=^docker,lo)

"$WEFT" compile plans/tiny.lua -o "$WORK/cuda" --backend cuda "${NCCL[@]}" 2>/dev/null
L=$WORK/cuda/launch.sh
check "launch.sh is valid sh" sh -n "$L"
# the exports, in a shell of their own: the values NCCL will read
env_of() { sh -c "$(grep '^export NCCL_' "$L"); env" | grep '^NCCL_' | sort; }
want="NCCL_ALGO=Ring,Tree
NCCL_DEBUG=WARN
NCCL_IB_DISABLE=1
NCCL_MAX_NCHANNELS=16
NCCL_MIN_NCHANNELS=4
NCCL_PROTO=^LL128
NCCL_SOCKET_IFNAME=^docker,lo"
check "launch.sh exports the seven settings" test "$(env_of)" = "$want"
check "mpirun forwards each to every node (-x)" \
  grep -q -- '-x NCCL_ALGO -x NCCL_DEBUG -x NCCL_IB_DISABLE -x NCCL_MAX_NCHANNELS -x NCCL_MIN_NCHANNELS -x NCCL_PROTO -x NCCL_SOCKET_IFNAME' "$L"
check "the exports come before mpirun" \
  test "$(grep -n '^export NCCL_ALGO' "$L" | cut -d: -f1)" -lt "$(grep -n '^exec mpirun' "$L" | cut -d: -f1)"
"$WEFT" compile plans/tiny.lua -o "$WORK/cuda-plain" --backend cuda 2>/dev/null
check "without plan.nccl a CUDA launch.sh exports no NCCL_ variable" \
  bash -c "! grep -q NCCL_ '$WORK/cuda-plain/launch.sh'"

# (the report goes through a file: its text may hold quotes)
"$WEFT" check plans/tiny.lua "${NCCL[@]}" > "$WORK/check.txt"
check "weft check lists the settings" \
  bash -c "grep -q '^comm      nccl with 7 setting(s)' '$WORK/check.txt' && grep -qx '  NCCL_PROTO=^LL128' '$WORK/check.txt'"
check "weft check says nothing of comm for a plan without it" \
  bash -c "! '$WEFT' check plans/tiny.lua | grep -q '^comm'"

# The CPU backend always runs MPI: the settings change none of its files.
"$WEFT" compile plans/tiny.lua -o "$WORK/cpu" 2>/dev/null
"$WEFT" compile plans/tiny.lua -o "$WORK/cpu-nccl" "${NCCL[@]}" 2>/dev/null
check "CPU backend: byte-identical output with or without plan.nccl" diff -r "$WORK/cpu" "$WORK/cpu-nccl"
"$WEFT" compile plans/tiny.lua -o "$WORK/cpu-mpi" --set comm=mpi 2>/dev/null
check "CPU backend: byte-identical output with comm = \"mpi\"" diff -r "$WORK/cpu" "$WORK/cpu-mpi"

# comm = "mpi": 4 ranks may share 2 GPUs; with NCCL each rank needs its own.
GPU=(--set cluster.device.name=H100_SXM --set cluster.device.fp32=67 --set cluster.device.memory_gib=80
     --set cluster.devices_per_node=2 --set mesh.dp=4 --set batch.global=32)
check "comm = \"mpi\": 4 ranks on 2 devices compile" \
  "$WEFT" compile plans/tiny.lua -o "$WORK/shared" --backend cuda --set comm=mpi "${GPU[@]}"
check "comm = \"mpi\": launch.sh says ranks share devices, exports no NCCL_" \
  bash -c "grep -q 'ranks may' '$WORK/shared/launch.sh' && ! grep -q 'export NCCL_' '$WORK/shared/launch.sh'"
# tiny's ranks take about 51 MiB each (memory.c's plan): one fits in 0.08 GiB (82 MiB), two sharing one do not
alone=$("$WEFT" check plans/tiny.lua "${GPU[@]}" --set cluster.devices_per_node=4 --set cluster.device.memory_gib=0.08)
shared=$("$WEFT" check plans/tiny.lua "${GPU[@]}" --set comm=mpi --set cluster.device.memory_gib=0.08)
check "weft check: a rank per device fits in 0.08 GiB" grep -q '^  verdict      fits' <<<"$alone"
check "weft check: two ranks sharing a 0.08 GiB device do not fit" \
  bash -c "grep -q '^  shared       2 ranks per device' <<<'$shared' && grep -q '^  verdict      DOES NOT FIT' <<<'$shared'"
err=$("$WEFT" check plans/tiny.lua "${GPU[@]}" 2>&1 >/dev/null || true)
check "comm = \"nccl\": 4 ranks on 2 devices are refused, naming comm = \"mpi\"" \
  grep -q 'plan.mesh: dp \* tp \* pp = 4 ranks, but the cluster has 2 devices (valid: a mesh whose product is 2, or comm = "mpi"' <<<"$err"
err=$("$WEFT" check plans/tiny.lua "${GPU[@]}" --set comm=mpi --set mesh.dp=3 --set batch.global=24 2>&1 >/dev/null || true)
check "comm = \"mpi\": 3 ranks on 2 devices are refused (uneven)" \
  grep -q 'plan.mesh: dp \* tp \* pp = 3 ranks do not share the cluster' <<<"$err"

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
