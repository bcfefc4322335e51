#!/usr/bin/env bash
# mpi_placement.sh: with twice as many ranks as cores, run as launch.sh runs
# them (mpirun --oversubscribe --bind-to none), half computing and half
# waiting, how often do two computing ranks share a core, and what does it
# cost them (bench/mpi_placement.c)?  Rounds alternate waiters polling in
# MPI_Recv (the runtime's waits) and asleep.  Run it on a quiet machine: other
# jobs take cores too.
#   bench/mpi_placement.sh [LOOP_ITERATIONS] [ROUNDS]   (defaults 300000000 and 6)
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d "${TMPDIR:-/tmp}/weft-placement.XXXXXX")
trap 'rm -rf "$work"' EXIT
mpicc -O1 -o "$work/mpi_placement" bench/mpi_placement.c
flags=""
if [ "$(id -u)" = 0 ]; then flags="--allow-run-as-root"; fi
cores=$(nproc)
echo "== $((2 * cores)) ranks on $cores cores: $cores compute, $cores wait"
# shellcheck disable=SC2086
mpirun $flags --oversubscribe --bind-to none -np $((2 * cores)) "$work/mpi_placement" "${1:-300000000}" "${2:-6}"
