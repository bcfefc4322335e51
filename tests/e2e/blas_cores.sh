#!/usr/bin/env bash
# Layout invariance under two forced OpenBLAS kernel sets.  Each core type sums
# the GEMMs in its own order, so the layouts' reduction-order noise (and an
# isolated element whose gradient is noise) differs by core: the tolerances of
# equivalence.sh and llama.sh (derived there and in lib.sh, not measured on
# one CPU) must hold on every core this CPU can run.  A slice of both tables
# (dp, tp, tp + sp, pp, 3D, ZeRO, selective and full recompute) runs with
# OPENBLAS_CORETYPE forced to each core; a probe run's log must say that the
# library really ran that core (OpenBLAS silently ignores a name it does not
# take).  Prints the worst ||a-b||/||a-a0|| and max|a-b| seen per core.
source "$(dirname "$0")/lib.sh"
here=$(dirname "$0")
# The cores this CPU can execute: AVX2 (Haswell) and AVX-512 (SkylakeX), else
# AVX (Sandybridge) as the second one.
flags=$(grep -m1 '^flags' /proc/cpuinfo || true)
cores=()
[[ " $flags " == *" avx2 "* && " $flags " == *" fma "* ]] && cores+=(Haswell)
if [[ " $flags " == *" avx512f "* && " $flags " == *" avx512bw "* && " $flags " == *" avx512vl "* &&
      " $flags " == *" avx512dq "* ]]; then cores+=(SkylakeX)
elif [[ " $flags " == *" avx "* ]]; then cores+=(Sandybridge)
fi
[ ${#cores[@]} = 2 ] || { echo "skipped: this CPU runs no two of Haswell, SkylakeX, Sandybridge"; exit 0; }

EQUIV_ROWS=${EQUIV_ROWS:-"dp2 tp2_sp pp2_1f1b rc_3d_int z2_dp2tp2"}
LLAMA_ROWS=${LLAMA_ROWS:-"tp2 tp2_rs 3d_int_rc"}
build_plan probe plans/tiny.lua --set data.train="$(make_data)" --set model.layers=1 \
  --set model.hidden=32 --set model.seq=16 --set train.steps=1
for core in "${cores[@]}"; do
  log=$(OPENBLAS_CORETYPE=$core "$WORK/probe/launch.sh" 2>&1 | grep "^blas:" || true)  # not --quiet
  check "$core: $log" grep -q "core $core (OPENBLAS_CORETYPE=$core from the environment)," <<<"$log"
  for t in equivalence llama; do
    rows=$EQUIV_ROWS; [ $t = llama ] && rows=$LLAMA_ROWS
    OPENBLAS_CORETYPE=$core LAYOUTS="$rows" bash "$here/$t.sh" >"$WORK/$core.$t.out" 2>&1 && ok=1 || ok=0
    n=$(grep -c '^ok ' "$WORK/$core.$t.out" || true)
    check "$core: $t.sh $rows ($n of $(wc -w <<<"$rows") rows pass)" \
      test $ok = 1 -a "$n" = "$(wc -w <<<"$rows")"
    [ $ok = 1 ] || grep -v '^ok ' "$WORK/$core.$t.out" | head -20
  done
  # the worst of every row's ckpt diff summary
  cat "$WORK/$core".*.out | awk -v core=$core '
    match($0, /worst max\|a-b\| [^ ]+ \([^)]*\)/) {
      split(substr($0, RSTART, RLENGTH), m, " "); if (m[3] + 0 > mx) { mx = m[3] + 0; mxn = m[4] } }
    match($0, /worst \|\|a-b\|\|\/\|\|a-a0\|\| [^ ]+ \([^)]*\)/) {
      split(substr($0, RSTART, RLENGTH), r, " "); if (r[3] + 0 > rn) { rn = r[3] + 0; rnn = r[4] } }
    END { printf "     %s: worst ||a-b||/||a-a0|| %.3e %s, worst max|a-b| %.3e %s\n", core, rn, rnn, mx, mxn }'
done
echo "$passed passed, $failed failed"
[ $failed = 0 ]
