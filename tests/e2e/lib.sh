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
# as launch.sh does where ranks share cores (compiler/omp_wait.c), for every test: launch.sh
# keeps a setting of ours, and idle threads that spin would slow the suite's parallel runs
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}

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
  configure "$WORK/$name" "$WORK/$name/build" >"$WORK/$name.cmake.log" 2>&1 \
    || { cat "$WORK/$name.cmake.log"; return 1; }
  cmake --build "$WORK/$name/build" >"$WORK/$name.build.log" 2>&1 \
    || { cat "$WORK/$name.build.log"; return 1; }
}

# configure SRC BUILD [cmake options]: cmake's configure step for a program
# (generated, or tests/cuda_emu/program).  The first program of a test with
# SRC's languages runs cmake's checks: the compilers, find_package MPI and
# OpenMP, pkg-config (0.6 s of CPU time for C, 0.9 s with C++: as much as
# compiling a small plan's stage).  The others start from its answers, which
# depend on the machine only: its cache less the folders' own entries and the
# inputs (WEFT_*, CMAKE_BUILD_TYPE), preloaded with -C, and its compilers'
# descriptions (CMakeFiles/<version>/*.cmake).  WEFT_CMAKE_FRESH=1: every
# program from scratch.  Ninja where it is installed (CMAKE_GENERATOR, when
# set, chooses): a generated program's build then costs 0.45 s of CPU time
# instead of make's 0.65 s (two stages of plans/tiny.lua; make's own
# dependency scans and progress steps are the difference), 0.02 s instead
# of 0.12 s when nothing is left to build.
configure() {
  local src=$1 build=$2 langs seed tmp gen=${CMAKE_GENERATOR:-}
  shift 2
  [ -n "$gen" ] || ! command -v ninja >/dev/null || gen=Ninja
  [ -z "$gen" ] || set -- -G "$gen" "$@"
  langs=$(sed -n 's/^project([^ )]*\(.*\))$/\1/p' "$src/CMakeLists.txt" | tr -c 'A-Za-z\n' _)
  seed=$WORK/cmake-seed$langs${gen// /_}
  if [ -z "${WEFT_CMAKE_FRESH:-}" ] && [ -f "$seed/init.cmake" ]; then
    mkdir -p "$build/CMakeFiles" && cp -R "$seed/CMakeFiles/." "$build/CMakeFiles/" &&
      cmake -C "$seed/init.cmake" -S "$src" -B "$build" "$@"
    return
  fi
  cmake -S "$src" -B "$build" "$@" || return
  # the seed, made whole in a folder of its own and renamed (two jobs may race)
  tmp=$(mktemp -d "$WORK/cmake-seed.XXXXXX") && mkdir "$tmp/CMakeFiles" &&
    cp -R "$build"/CMakeFiles/[0-9]*.[0-9]* "$tmp/CMakeFiles/" && rm -rf "$tmp"/CMakeFiles/*/CompilerId* &&
    grep -v -F -e "$build" -e "$(cd "$src" && pwd)" "$build/CMakeCache.txt" | awk -F= '
      /^[A-Za-z_][A-Za-z0-9_.+-]*:[A-Z]+=/ {
        split($1, nt, ":"); name = nt[1]; type = nt[2]
        if (name ~ /^(WEFT_|CMAKE_BUILD_TYPE$|CMAKE_HOME_DIRECTORY$|CMAKE_CACHEFILE_DIR$)/ || type == "STATIC") next
        if (type == "UNINITIALIZED") type = "STRING"
        v = substr($0, length($1) + 2); gsub(/[\\"$]/, "\\\\&", v)
        printf "set(%s \"%s\" CACHE %s \"\")\n", name, v, type }' >"$tmp/init.cmake" &&
    { mv -T "$tmp" "$seed" 2>/dev/null || rm -rf "$tmp"; }
  return 0
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

# LAYOUTS="dp2 tp2 ..." (or ONLY=name): the layout tables run only these rows
# and the reference rows they are compared with.
# layouts_needed NAME-AND-REF-PAIRS... sets LAYOUTS_RUN to the rows to run.
layouts_needed() {
  LAYOUTS_RUN=""
  local want=" ${LAYOUTS:-${ONLY:-}} " name ref
  while [ $# -gt 0 ]; do
    name=$1 ref=$2; shift 2
    case "$want" in *" $name "*) LAYOUTS_RUN="$LAYOUTS_RUN $name $ref" ;; esac
  done
  LAYOUTS_RUN="$LAYOUTS_RUN "
}
layout_selected() {  # layout_selected NAME: true when the row runs
  [ -z "${LAYOUTS:-${ONLY:-}}" ] && return 0
  case "$LAYOUTS_RUN" in *" $1 "*) return 0 ;; esac
  return 1
}

# How far AdamW can move one element, whatever its gradient: the per-element
# bound on the difference of two runs from the same initial weights.
#   m_t = (1-b1) sum_i b1^(t-i) g_i,  v_t = (1-b2) sum_i b2^(t-i) g_i^2, so by
#   Cauchy-Schwarz |m_t| <= (1-b1) sqrt(sum_k (b1^2/b2)^k, k < t) sqrt(v_t / (1-b2)),
#   and the bias-corrected step |m_t/(1-b1^t)| / sqrt(v_t/(1-b2^t)) is at most
#   B_t = (1-b1)/sqrt(1-b2) * sqrt(sum_k (b1^2/b2)^k) * sqrt(1-b2^t) / (1-b1^t)
#   (B_1 = 1; with betas 0.9, 0.95 it stays within 1.00-1.17).  eps only
#   shrinks it; gradient clipping and loss scaling rescale a whole step's
#   gradients, which the bound does not depend on; weight decay multiplies a
#   difference by 1 - lr*wd <= 1.  So two runs differ by at most
#   2 * sum_t lr_t * B_t in any element.
# adam_reach PROGRAM.c METRICS.jsonl: that bound, from the betas the program
# was compiled with and the learning rates the run logged (one line a step).
adam_reach() {
  local betas
  betas=$(sed -n 's/.*\.beta1 = \([^,]*\), \.beta2 = \([^,]*\),.*/\1 \2/p' "$1" | head -n 1)
  [ -n "$betas" ] || { echo "adam_reach: no betas in $1" >&2; return 1; }
  awk -v b1="${betas% *}" -v b2="${betas#* }" '
    { lr = $0; sub(/.*"lr": /, "", lr); sub(/[,}].*/, "", lr)
      t++; geo += (b1 * b1 / b2) ^ (t - 1)
      bt = (1 - b1) / sqrt(1 - b2) * sqrt(geo) * sqrt(1 - b2 ^ t) / (1 - b1 ^ t)
      reach += 2 * lr * bt }
    END { if (t == 0) exit 1; printf "%.3e\n", reach }' "$2"
}

# The relative disagreement fp32 reduction order allows two layouts' whole
# tensors, measured against what training moved them: ||a - b|| / ||a - a0||
# (a0 the common initial weights; `weft ckpt diff --from`).  A sum of K terms
# reordered differs by at most (K - 1) u of the sum of their magnitudes
# (u = 2^-24, Higham's bound); every weight gradient sums K = tokens-per-step
# contributions, and AdamW's step is invariant to the gradient's scale, so the
# step's direction moves by no more than that relative amount.  Each step's
# difference feeds the next one's forward pass, so over T steps the updates'
# sum, a - a0, differs by at most T * K * u of itself.  Elements whose gradient
# is itself rounding noise (zero in exact arithmetic, or crossing zero) can
# differ by a whole update: they are few (one in 4096 of an o_proj, the
# c_attn key bias whose eps-limited steps stay near 1e-6) and limited only by
# adam_reach.
# reduction_noise STEPS TOKENS_PER_STEP
reduction_noise() {
  awk -v t="$1" -v k="$2" 'BEGIN { printf "%.3e\n", t * k * 2 ^ -24 }'
}

# Two layouts' final weights agree to reduction-order noise (reduction_noise,
# per tensor against the updates) and no element differs by more than AdamW
# can move it (adam_reach); prints ckpt diff's summary.
# weights_match A.safetensors B.safetensors INIT.safetensors REF_PROGRAM.c REF_METRICS.jsonl TOKENS_PER_STEP
#   [ckpt diff options, e.g. --noise PATTERN:LO:HI]
weights_match() {
  local bound tol
  bound=$(adam_reach "$4" "$5") || return 1
  tol=$(reduction_noise "$(grep -c '"loss"' "$5")" "$6")
  "$WEFT" ckpt diff "$1" "$2" --norm-tol "$tol" --from "$3" --bound "$bound" "${@:7}" | tail -n 1
  return "${PIPESTATUS[0]}"
}

# 16-bit storage: the relative disagreement two runs' whole tensors may show,
# ||a - b|| / ||a - a0|| as above, when every activation, activation gradient
# and weight gradient is rounded to 16 bits (unit roundoff u: 2^-8 bf16,
# 2^-11 fp16).  A layout rounds partial results the reference does not
# (another microbatch split, tensor-parallel partials before their sum), so
# its stored values differ from the reference's by whole roundings, which no
# reordering bound like T K u covers.  One rounding to nearest errs by at
# most u of the value, its error spread evenly over half an ulp either side:
# mean square at most u^2/3.  Taken as independent (Higham and Mary's
# probabilistic rounding analysis), N roundings add their mean squares, and
# a tensor's ||a-b||^2 / ||a-a0||^2 averages the squares over its elements,
# so it is about N u^2 / 3, to first order (no amplification), as the fp32
# rule assumes.  N counts, for T steps and both runs, every rounding on a
# value's path within a step: the rounding calls of the activations and their
# gradients in all of a run's stage programs (rounding_sites; tensor
# parallelism has twice the reference's, for its partials) plus one per
# microbatch accumulated into the weight gradient.  Elements whose gradient
# is zero in exact arithmetic hold nothing but noise AdamW amplified: they
# are left out of the norms (`ckpt diff --noise`) and held to adam_reach.
# rounding_sites DIR: per step, the rounding calls of one run's programs
# (DIR/stage*.c) a value passes plus its weight gradient's accumulations
# (under 16-bit storage the kernels round where the programs say "stored
# rounded", emit_ops.c)
rounding_sites() {
  local calls accum
  calls=$(cat "$1"/stage*.c | grep -c 'wf_to_[bf][fp]16(c, [ad] +\|/\* [ad] + [A-Z0-9_]*: stored rounded to ')
  accum=$(sed -n 's/.*\.accum = \([0-9]*\),.*/\1/p' "$1/stage0.c" | head -n 1)
  echo $((calls + ${accum:-1}))
}
# storage_noise STEPS U SITES_A SITES_B: sqrt(T (A + B) / 3) u
storage_noise() {
  awk -v t="$1" -v u="$2" -v a="$3" -v b="$4" 'BEGIN { printf "%.3e\n", sqrt(t * (a + b) / 3) * u }'
}

# Two implementations of the same kernels (the CPU's and the emulated CUDA
# ones) accumulate in different orders inside every kernel, not only in the
# weight gradients' sums.  A kernel that sums K products (a GEMM's inner
# dimension, a softmax or layernorm row, an attention row) is within
# gamma_K ~ K u of exact relative to the sum of the magnitudes (Higham), so
# two implementations within 2 K u of each other.  To first order (no
# amplification, as reduction_noise assumes) the relative errors of the
# kernels a value passes through in one step add: S = sum of their K over the
# forward and backward path of the first block's weights (the longest), and
# over T steps the updates differ by at most T * 2 u * S of themselves.
# For GPT-2 (hidden C, head size D, sequence Q, vocabulary V, N tokens a
# step, L blocks), per block: forward  2C (ln_1) + C (c_attn) + D + 2Q
# (scores, softmax, P V) + C (c_proj) + 2C (ln_2) + C (c_fc) + 4C
# (mlp.c_proj); backward  the input gradients' 4C + C + 3C + C, layernorms
# 4C, attention 2D (dP, the row dot D) + 3Q (dQ, dK, dV); the head: 2C + C
# + V forward, V + 2C backward; and the weight gradient's N.
# gpt2_kernel_noise STEPS L C HEADS Q V N
gpt2_kernel_noise() {
  awk -v t="$1" -v l="$2" -v c="$3" -v h="$4" -v q="$5" -v v="$6" -v n="$7" 'BEGIN {
    d = c / h
    fwd = 11 * c + d + 2 * q; bwd = 13 * c + 2 * d + 3 * q
    s = l * (fwd + bwd) + (3 * c + v) + (v + 2 * c) + n
    printf "%.3e\n", t * 2 * 2 ^ -24 * s }'
}
