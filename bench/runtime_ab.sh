#!/usr/bin/env bash
# runtime_ab.sh: one generated program linked against two builds of the CPU
# runtime (libweftrt.a), run alternately in one script, so that a machine's
# load hits both alike: each run's tokens/s over the timed steps, and the user
# and system CPU time of those steps from `perf stat` (all ranks' threads;
# what other jobs on the machine change least); medians and the B / A ratios.
#
#   bash bench/runtime_ab.sh RT_A RT_B        (two runtime build folders, each
#                                              holding weft-runtime.cmake)
#
# e.g. save the runtime before a change (cp -r build/runtime /tmp/rt_before;
# the .a and weft-runtime.cmake suffice), rebuild, then
#   bash bench/runtime_ab.sh /tmp/rt_before build/runtime
# MODEL (small | gpt2; default small), DP (ranks: 1 or 2; default 1), ROUNDS
# (4), STEPS (12 timed after 2 warm-up), PERF=0 (no perf stat), SET_A / SET_B
# (more `--set KEY=VALUE` words for A's or B's compile, e.g. SET_B=lmhead_chunk=1024:
# one runtime for both then compares two plans).  Run from the
# repository root after scripts/build.sh; everything runs under nice.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -eq 2 ] || { echo "usage: runtime_ab.sh RT_A RT_B" >&2; exit 2; }
WEFT=${WEFT:-build/compiler/weft}
MODEL=${MODEL:-small} DP=${DP:-1} ROUNDS=${ROUNDS:-4} STEPS=${STEPS:-12} PERF=${PERF:-1}
command -v perf >/dev/null || PERF=0
WORK=$(mktemp -d "${TMPDIR:-/tmp}/weft-runtime-ab.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
case $MODEL in small) L=4 C=256 H=4 ;; gpt2) L=12 C=768 H=12 ;; *) echo "unknown MODEL $MODEL" >&2; exit 2 ;; esac

"$WEFT" data synth -o "$WORK/data.bin" --vocab 50304 --tokens 2000000 >/dev/null
for k in A B; do
  rt=$1; [ $k = B ] && rt=$2
  rt=$(cd "$rt" && pwd)
  sets=${SET_A:-}; [ $k = B ] && sets=${SET_B:-}
  extra=(); for kv in $sets; do extra+=(--set "$kv"); done
  "$WEFT" compile plans/tiny.lua -o "$WORK/$k" --set model.layers=$L --set model.hidden=$C \
    --set model.heads=$H --set model.seq=256 --set model.vocab=50304 --set data.train="$WORK/data.bin" \
    --set train.steps=$((STEPS + 2)) --set train.log_every=1 --set batch.global=4 \
    --set batch.micro=$((4 / DP)) --set mesh.dp=$DP --set buckets.mb=25 "${extra[@]}" >/dev/null 2>&1
  cmake -S "$WORK/$k" -B "$WORK/$k/build" -DWEFT_RUNTIME="$rt" >/dev/null
  nice cmake --build "$WORK/$k/build" >/dev/null
done

cpu_s() {  # cpu_s A|B [program options] -> "user system" CPU seconds of the whole run (perf stat)
  nice perf stat -x, -e user_time,system_time -o "$WORK/$1.perf" -- "$WORK/$1/launch.sh" "${@:2}" >"$WORK/$1.log" 2>&1
  awk -F, '$3 == "user_time" { u = $1 / 1e9 } $3 == "system_time" { s = ($1 ~ /^[0-9]+$/ ? $1 / 1e9 : 0) }
    END { printf "%.3f %.3f", u, s }' "$WORK/$1.perf"
}
run() {  # run A|B -> "tokens/s user_seconds_per_step system_seconds_per_step"
  local per="0 0"
  if [ "$PERF" = 1 ]; then
    # CPU time of the timed steps alone: a run of the 2 warm-up steps taken
    # from the whole one (setup, data and parameter init cost the same in
    # both).  User and system time apart: the kernel's share of setup (page
    # faults, zeroing) varies by a second or more from run to run on a
    # virtual machine, more than a step's difference
    local short long
    short=$(cpu_s "$1" --steps 2)
    long=$(cpu_s "$1" --metrics "$WORK/$1.jsonl")
    per=$(echo "$short $long" | awk -v n="$STEPS" '{ printf "%.3f %.3f", ($3 - $1) / n, ($4 - $2) / n }')
  else
    nice "$WORK/$1/launch.sh" --metrics "$WORK/$1.jsonl" >"$WORK/$1.log" 2>&1
  fi
  awk -v skip=2 -v tok=$((4 * 256)) -v per="$per" '
    NR > skip { sub(/.*"ms": /, ""); split($0, f, /[,}]/); ms += f[1]; n++ }
    END { printf "%.1f %s\n", n * tok / (ms / 1000), per }' "$WORK/$1.jsonl"
}
med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "== $MODEL, $DP rank(s) x $((($(nproc) + DP - 1) / DP)) thread(s); A = $1 ${SET_A:-}, B = $2 ${SET_B:-}"
for r in $(seq "$ROUNDS"); do
  for k in A B; do
    read -r t u s <<<"$(run $k)"
    echo "$t" >>"$WORK/$k.t"; echo "$u" >>"$WORK/$k.u"; echo "$s" >>"$WORK/$k.s"
    echo "round $r $k: $t tok/s, per step (all ranks and threads) $u s user, $s s system CPU"
  done
done
for f in t u s; do
  a=$(med <"$WORK/A.$f") b=$(med <"$WORK/B.$f")
  name=tok/s; [ $f = u ] && name=user-s/step; [ $f = s ] && name=sys-s/step
  awk -v a="$a" -v b="$b" -v n="$name" 'BEGIN { printf "median %-11s A %9.3f  B %9.3f  B/A %.3f\n", n, a, b, (a > 0 ? b / a : 0) }'
done
