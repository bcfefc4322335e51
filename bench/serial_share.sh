#!/usr/bin/env bash
# serial_share.sh: how much of a one-rank CPU step runs on the master thread
# alone, from a `perf record` profile of the steady steps (the second half of
# the run's samples: setup and parameter init left out).  The OpenMP workers
# only run parallel regions, so what the master runs beyond the busiest worker,
# symbol by symbol, is work no other thread shares: the part of the step that
# more threads cannot speed up (an upper bound: where two threads differ by
# chance alone, the master's half of the difference counts too; run twice
# and compare).  Samples, not wall time: a machine shared with
# other jobs changes them least.  (OMP_WAIT_POLICY=PASSIVE, as launch.sh sets
# it: waiting threads sleep, so spinning is not counted as work.)
#
#   bash bench/serial_share.sh        (from the repository root, after scripts/build.sh)
#
# MODEL (small | gpt2; default small), STEPS (16), TOP (symbols listed; 12).
# Prints each thread's share of the samples, the master-only share, and the
# symbols that make it up.  Needs perf.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/compiler/weft}
MODEL=${MODEL:-small} STEPS=${STEPS:-16} TOP=${TOP:-12}
command -v perf >/dev/null || { echo "serial_share.sh: needs perf" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/weft-serial-share.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
case $MODEL in small) L=4 C=256 H=4 ;; gpt2) L=12 C=768 H=12 ;; *) echo "unknown MODEL $MODEL" >&2; exit 2 ;; esac

"$WEFT" data synth -o "$WORK/data.bin" --vocab 50304 --tokens 2000000 >/dev/null
"$WEFT" compile plans/tiny.lua -o "$WORK/p" --set model.layers=$L --set model.hidden=$C \
  --set model.heads=$H --set model.seq=256 --set model.vocab=50304 --set data.train="$WORK/data.bin" \
  --set train.steps="$STEPS" --set batch.global=4 --set batch.micro=4 --set mesh.dp=1 >/dev/null 2>&1
cmake -S "$WORK/p" -B "$WORK/p/build" -DWEFT_RUNTIME="$(pwd)/build/runtime" >/dev/null
nice cmake --build "$WORK/p/build" >/dev/null
OMP_WAIT_POLICY=PASSIVE nice perf record -q -F 999 -o "$WORK/perf.data" -- "$WORK/p/launch.sh" >"$WORK/run.log" 2>&1
perf report -i "$WORK/perf.data" --time 50%-100% --no-children --sort pid,sym --stdio -g none 2>/dev/null \
  >"$WORK/report.txt"

echo "== $MODEL, 1 rank x $(nproc) thread(s), $STEPS steps: samples of the second half, per thread and symbol"
# lines: "  33.71%  12810:exe  [.] sgemm_kernel_SKYLAKEX"; the pid key is the thread's id
awk -v top="$TOP" -v threads="$(nproc)" '
  /^#/ || NF < 4 || $1 !~ /%$/ { next }
  {
    pct = $1 + 0; tid = $2; sub(/:.*/, "", tid); comm = $2; sub(/^[0-9]+:/, "", comm)
    if (comm ~ /^(mpirun|orted|prted|perf)$/) next
    sym = $0; sub(/^ *[0-9.]+% +[^ ]+ +/, "", sym)
    share[tid, sym] += pct; total[tid] += pct; syms[sym] = 1
  }
  END {
    # the program: its `threads` busiest threads; the master is the first made (lowest id)
    n = 0
    for (t in total) ids[++n] = t
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (total[ids[j]] > total[ids[i]]) { x = ids[i]; ids[i] = ids[j]; ids[j] = x }
    if (n > threads) n = threads
    master = ids[1]
    for (i = 2; i <= n; i++) if (ids[i] + 0 < master + 0) master = ids[i]
    for (i = 1; i <= n; i++) printf "thread %s%s: %.2f%% of the samples\n", ids[i], ids[i] == master ? " (master)" : "", total[ids[i]]
    m = 0
    for (s in syms) {
      w = 0
      for (i = 1; i <= n; i++) if (ids[i] != master && share[ids[i], s] > w) w = share[ids[i], s]
      d = share[master, s] - w
      if (d > 0) { serial += d; ex[++m] = sprintf("%8.2f%%  master %6.2f%%  worker %6.2f%%  %s", d, share[master, s], w, s); key[m] = d }
    }
    for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (key[j] > key[i]) { x = key[i]; key[i] = key[j]; key[j] = x; y = ex[i]; ex[i] = ex[j]; ex[j] = y }
    printf "master alone: %.2f%% of the samples (the symbols where the master ran more than the busiest worker):\n", serial
    for (i = 1; i <= m && i <= top; i++) print ex[i]
  }' "$WORK/report.txt"
