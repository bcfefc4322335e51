#!/usr/bin/env bash
# mpi_wait.sh: does a rank waiting in MPI_Recv give its core to the ranks
# that compute?  Two ranks pinned to one core (taskset), oversubscribed as
# launch.sh runs more ranks than cores: rank 0 computes, rank 1 waits for
# its message, in MPI_Recv and (for comparison) asleep.  If the waiter in
# MPI_Recv uses about as much CPU as the computing rank, a pipeline's bubble
# is not filled by the other ranks' work: `weft simulate` then stretches an
# oversubscribed step by ranks / cores (compiler/simulate.c, oversubscription).
#   bench/mpi_wait.sh [LOOP_ITERATIONS] [ROUNDS]   (defaults 200000000 and 4)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-mpiwait.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpicc -O1 -o "$work/mpi_wait" bench/mpi_wait.c
flags=""
if [ "$(id -u)" = 0 ]; then flags="--allow-run-as-root"; fi
# shellcheck disable=SC2086
taskset -c 0 mpirun $flags --oversubscribe --bind-to none -np 2 "$work/mpi_wait" "${1:-200000000}" "${2:-4}" |
    sort -k2,2n -s
