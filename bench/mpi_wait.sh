#!/usr/bin/env bash
# mpi_wait.sh: does a rank waiting in MPI_Recv give its core to the ranks
# that compute?  Two ranks pinned to one core (taskset): rank 0 computes,
# rank 1 waits for its message, in MPI_Recv and (for comparison) asleep.
# Run twice: as launch.sh runs more ranks than cores (Open MPI is told the
# node has one slot, so it knows it is oversubscribed and yields the core
# between polls: mpi_yield_when_idle), and with Open MPI believing each rank
# has a core of its own (it polls without yielding).  The waiter's CPU
# seconds over the computing rank's wall seconds is what a waiting rank
# costs: `weft simulate` shares an oversubscribed node's cores along the
# timeline with waiting ranks at that share (compiler/simulate.c, WAIT_SHARE).
#   bench/mpi_wait.sh [LOOP_ITERATIONS] [ROUNDS]   (defaults 200000000 and 4)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-mpiwait.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpicc -O1 -o "$work/mpi_wait" bench/mpi_wait.c
flags=""
if [ "$(id -u)" = 0 ]; then flags="--allow-run-as-root"; fi
echo "== oversubscribed as launch.sh runs it (one slot, two ranks: Open MPI yields when idle)"
# shellcheck disable=SC2086
taskset -c 0 mpirun $flags --host localhost:1 --oversubscribe --bind-to none -np 2 "$work/mpi_wait" \
    "${1:-200000000}" "${2:-4}" | sort -k2,2n -s
echo "== Open MPI told each rank has a core (it polls without yielding)"
# shellcheck disable=SC2086
taskset -c 0 mpirun $flags --host localhost:2 --bind-to none -np 2 "$work/mpi_wait" \
    "${1:-200000000}" "${2:-4}" | sort -k2,2n -s
