# storage_ab.sh (sourced by bench/act16_cpu.sh and bench/grad16.sh): one plan
# compiled with two values of a WEFT_* storage switch, bf16, side by side:
# `weft check`'s memory rows, the runs alternated ROUNDS times so that both
# see the same machine load, and the figures the tables print.
# Expects WEFT, WORK, STEPS and ROUNDS.

# ab_build SWITCH NAME VALUE PLAN [--set ...]: $WORK/NAME-VALUE compiled with
# SWITCH=VALUE and built, its `weft check` in $WORK/NAME-VALUE.check
ab_build() {
  local switch=$1 name=$2 v=$3
  shift 3
  env "$switch=$v" "$WEFT" compile "$@" --set precision=bf16 --set train.steps="$STEPS" \
    --set train.log_every=1000 -o "$WORK/$name-$v" 2>/dev/null
  cmake -S "$WORK/$name-$v" -B "$WORK/$name-$v/build" >/dev/null && cmake --build "$WORK/$name-$v/build" >/dev/null
  env "$switch=$v" "$WEFT" check "$@" --set precision=bf16 >"$WORK/$name-$v.check"
}

# ab_rounds NAME VALUE...: each value's run, in turn, ROUNDS times; appends
# their tokens/s to the caller's associative array tok[VALUE]
ab_rounds() {
  local name=$1 k v t
  shift
  for ((k = 0; k < ROUNDS; k++)); do
    for v in "$@"; do
      (cd "$WORK" && "$WORK/$name-$v/launch.sh" >"$WORK/$name-$v.log" 2>&1)
      t=$(sed -n 's/^throughput: \([0-9.]*\) tokens\/s.*/\1/p' "$WORK/$name-$v.log")
      tok[$v]="${tok[$v]:-} $t"
    done
  done
}

row() {  # bytes of a `weft check` memory row
  awk -v k="$1" 'substr($0, 3, 12) == sprintf("%-12s", k) {
      split(substr($0, 15), f, " "); u = f[2]
      m = u == "B" ? 1 : u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 0
      printf "%.2f MiB", f[1] * m / 1048576; exit }' "$2"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }'; }
best() { tr ' ' '\n' <<<"$1" | sort -g | tail -1; }
rss() { sed -n 's/^peak RSS: rank 0 \([0-9.]*\) MiB.*/\1/p' "$1"; }
alloc() { sed -n 's/^memory: rank 0 allocated \([0-9.]*\) MiB, planned \([0-9.]*\) MiB.*/\1 of \2 planned/p' "$1"; }
