# lib.sh: helpers for the end-to-end tests (sourced).
# Usage in a test: source lib.sh "$WEFT" ; build_plan NAME PLAN [--set k=v ...]
set -euo pipefail

WEFT=${WEFT:?set WEFT to the weft binary}
# WEFT_SNAPSHOT=DIR (bench/generated_identical.sh): compile only, into
# DIR/<test>/<layout> for both backends, in a fixed work folder so that two
# compilers' outputs can be compared byte for byte; nothing is built or run.
if [ -n "${WEFT_SNAPSHOT:-}" ]; then
  WORK=$WEFT_SNAPSHOT/work/$(basename "$0" .sh); mkdir -p "$WORK"
else
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/weft-e2e.XXXXXX")
  trap '[ -n "${KEEP:-}" ] || rm -rf "$WORK"' EXIT
fi
export OMPI_MCA_rmaps_base_oversubscribe=1

# Results: one line per check, then "N passed, M failed" (the tests end with
# `echo "$passed passed, $failed failed"; [ $failed = 0 ]`).
passed=0 failed=0
check() {  # check NAME COMMAND...: passes when COMMAND succeeds
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; fi
}

# Compiles PLAN with overrides into $WORK/NAME and builds it.
build_plan() {
  local name=$1 plan=$2
  shift 2
  if [ -n "${WEFT_SNAPSHOT:-}" ]; then
    local snap=$WEFT_SNAPSHOT/out/$(basename "$0" .sh)
    mkdir -p "$snap"
    "$WEFT" compile "$plan" -o "$snap/$name" "$@" >"$snap/$name.log" 2>&1 || true
    "$WEFT" compile "$plan" -o "$snap/$name.cuda" --backend cuda "$@" >"$snap/$name.cuda.log" 2>&1 || true
    return 0
  fi
  "$WEFT" compile "$plan" -o "$WORK/$name" "$@" 2>/dev/null
  cmake -S "$WORK/$name" -B "$WORK/$name/build" >"$WORK/$name.cmake.log" 2>&1 \
    || { cat "$WORK/$name.cmake.log"; return 1; }
  cmake --build "$WORK/$name/build" >"$WORK/$name.build.log" 2>&1 \
    || { cat "$WORK/$name.build.log"; return 1; }
}

# Runs a built plan: run_plan NAME [program options]
run_plan() {
  local name=$1
  shift
  [ -z "${WEFT_SNAPSHOT:-}" ] || return 0
  "$WORK/$name/launch.sh" --quiet "$@"
}

# A synthetic token file shared by the tests.
make_data() {
  "$WEFT" data synth -o "$WORK/synth.bin" --tokens 200000 --vocab 256 --branch 4 --seed 7 >/dev/null
  echo "$WORK/synth.bin"
}

# Compares a field of two metrics files step by step:
# same_field FIELD A B RELTOL -> prints the worst relative difference.
# A skipped fp16 step logs "grad_norm": null: null equals null only, and
# null against a number fails, naming the line.
same_field() {
  awk -v key="\"$1\": " -v tol="$4" -v field="$1" '
    function value(line) { sub(".*" key, "", line); sub(/[,}].*/, "", line); return line }
    function abs(x) { return x < 0 ? -x : x }
    NR == FNR { ref[FNR] = value($0); n = FNR; next }
    { v = value($0); m = FNR
      if (v == "null" || ref[FNR] == "null") {
        if (v != ref[FNR]) { bad = bad sprintf("; line %d: %s vs %s", FNR, ref[FNR], v) }
        next
      }
      d = v == ref[FNR] ? 0 : abs(v - ref[FNR]) / (ref[FNR] == 0 ? 1 : abs(ref[FNR]))  # 0 vs x: absolute
      if (d > worst) worst = d }
    END { printf "%s within %.1e over %d steps%s", field, worst, m, bad;
          exit !(m == n && n > 0 && worst <= tol && bad == "") }' "$2" "$3"
}
