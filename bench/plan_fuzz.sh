#!/usr/bin/env bash
# plan_fuzz.sh: a randomized check of what `weft plan` promises (issue 19),
# on models, clusters and batches nobody picked by hand.
#
#   bench/plan_fuzz.sh [SEED] [CASES]     (defaults 1 and 60; from the repository root)
#   WEFT (default build/compiler/weft); KEEP=1 keeps the work folder.
#
# Each case draws from SEED (bash's RANDOM, seeded: the same seed gives the
# same cases) a base plan (tiny, llama_tiny, gpt2_124m, two of SC21's GPTs)
# with odd model sizes (1 layer, prime layer counts, head counts that are not
# powers of two, vocabularies that divide by nothing), a GPU count (primes and
# non-multiples of a node among them), a backend, a precision, clipping on or
# off, a global batch (primes, ones no mesh divides), sometimes a small
# device memory, the objective and --top K.  For each it asserts:
#   - `weft plan` exits 0 or 1; with 1, stderr is one `weft: error:` line
#     that names a feasible change (GPUs, ZeRO, a batch, a valid value);
#   - exit 0: `weft check best.lua` accepts it; `weft simulate best.lua` has
#     every stage fitting and the table's first step time; the written mesh
#     is row 1's; a second run prints the same table and writes the same plan;
#   - --objective memory: row 1's memory is the least printed;
#   - CPU backend, small model: `weft compile best.lua` succeeds, and every
#     TRAIN_EVERY-th such case (default 8) is built and trains 2 steps;
#   - refusal parity: the table's rejected layouts and two random meshes are
#     accepted or refused alike by `weft simulate` and `weft compile` on the
#     same backend.
# Prints one line per failure, then cases, accepted, refused and failures by
# kind; exits 1 on any failure.  Nice it: the machine is shared.
set -uo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/compiler/weft}
SEED=${1:-1}
CASES=${2:-60}
TRAIN_EVERY=${TRAIN_EVERY:-8}
[ -x "$WEFT" ] || { echo "plan_fuzz.sh: $WEFT not built" >&2; exit 2; }
# the e2e helpers: a work folder (KEEP=1 keeps it) and configure(), which
# builds a compiled plan quickly
export WEFT
source tests/e2e/lib.sh
set +e
echo "work folder $WORK"

RANDOM=$SEED
# pick VAR CHOICES...: VAR = one of CHOICES (no subshell: RANDOM must advance here)
pick() { local v=$1; shift; local a=("$@"); printf -v "$v" '%s' "${a[RANDOM % ${#a[@]}]}"; }
chance() { [ $((RANDOM % 100)) -lt "$1" ]; }

declare -A fails
n_fail=0 n_ok=0 n_refused=0 n_cpu=0 n_cuda=0 n_trained=0 n_parity=0
fail() {  # fail KIND CASE MESSAGE
  fails[$1]=$(( ${fails[$1]:-0} + 1 )); n_fail=$((n_fail + 1))
  echo "FAIL [$1] case $2: $3"
}

# row_field FILE ROW OFFSET: the field OFFSET after the MFU column of the
# table's row ROW (-2: step s, 1: mem GiB)
row_field() {
  awk -v r="$2" -v o="$3" '$1 == r && $2 == "dp" { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { print $(i + o); exit } }' "$1"
}
# layout_sets "dp 4 tp 2+sp pp 3 mb 2 interleaved/2 zero 1 rc none offload b25": its --set list
layout_sets() {
  awk '{ for (i = 1; i <= NF; i++) {
      if ($i == "dp") printf "--set mesh.dp=%s ", $(i + 1)
      else if ($i == "tp") { t = $(i + 1); sp = "false"; if (t ~ /\+sp$/) { sub(/\+sp$/, "", t); sp = "true" }
        printf "--set mesh.tp=%s --set mesh.sp=%s ", t, sp }
      else if ($i == "pp") { printf "--set mesh.pp=%s ", $(i + 1); s = $(i + 4)
        v = 1; if (s ~ /^interleaved\//) { v = substr(s, 13); s = "interleaved" }
        if (s == "-") s = "1f1b"
        printf "--set pipeline.schedule=%s --set pipeline.virtual=%s ", s, v }
      else if ($i == "mb") printf "--set batch.micro=%s ", $(i + 1)
      else if ($i == "zero") printf "--set zero=%s ", $(i + 1)
      else if ($i == "rc") printf "--set recompute=%s ", $(i + 1)
      else if ($i == "offload") printf "--set offload.optimizer=cpu --set offload.params=cpu "
      else if ($i ~ /^b[0-9.]+$/) printf "--set buckets.mb=%s ", substr($i, 2)
    } print "" }' <<<"$1"
}

for ((c = 1; c <= CASES; c++)); do
  D=$WORK/c$c; mkdir -p "$D"
  # ---- the draw ----
  pick base tiny tiny llama llama gpt2 n17 n39 swish g3d vlm
  sets=()
  case $base in
    tiny|gpt2|swish|g3d)
      plan=plans/tiny.lua; [ "$base" = gpt2 ] && plan=plans/gpt2_124m.lua
      [ "$base" = g3d ] && plan=plans/gpt2_3d.lua
      # a user kernel is read from the plan's folder, which -o must be: a copy here
      [ "$base" = swish ] && { mkdir -p "$D/kernels"; cp plans/kernels/swish.c "$D/kernels/"
                               cp plans/tiny_swish.lua "$D/"; plan=$D/tiny_swish.lua; }
      pick layers 1 2 3 4 5 7 11; pick heads 1 2 3 4 5 6 8 12; pick hd 8 16 32
      pick seq 16 32 64 100 128; pick vocab 97 256 257 1000 50257
      [ "$base" = gpt2 ] && { pick hd 16 32 64; pick vocab 257 1000 50257 50304; }
      sets+=(--set model.layers=$layers --set model.heads=$heads --set model.hidden=$((heads * hd))
             --set model.seq=$seq --set model.vocab=$vocab) ;;
    llama)
      plan=plans/llama_tiny.lua
      pick layers 1 2 3 5 7; pick heads 2 3 4 6 8; pick hd 8 16 32; pick seq 16 32 64 96
      pick vocab 97 256 300
      kv=$heads; chance 50 && { for k in 1 2 3; do [ $((heads % k)) = 0 ] && kv=$k; done; }
      sets+=(--set model.layers=$layers --set model.heads=$heads --set model.kv_heads=$kv
             --set model.hidden=$((heads * hd)) --set model.ffn_hidden=$((heads * hd * 8 / 3))
             --set model.seq=$seq --set model.vocab=$vocab) ;;
    vlm)
      plan=plans/vlm_tiny.lua; vocab=16
      pick layers 1 2 3 5; pick vlayers 1 2 3; pick heads 1 2 4; pick vheads 1 2 4
      sets+=(--set model.llm.layers=$layers --set model.vision.layers=$vlayers
             --set model.llm.heads=$heads --set model.llm.hidden=$((heads * 16))
             --set model.vision.heads=$vheads --set model.vision.hidden=$((vheads * 16))) ;;
    n17|n39)
      plan=plans/paper/narayanan_1_7b.lua; [ "$base" = n39 ] && plan=plans/paper/narayanan_39_1b.lua
      pick layers 1 2 3 5 8 13; sets+=(--set model.layers=$layers)
      chance 40 && { pick heads 12 20 24 40; pick hd 64 96 128; sets+=(--set model.heads=$heads --set model.hidden=$((heads * hd))); }
      chance 30 && { pick seq 512 1000 2048; sets+=(--set model.seq=$seq); }
      chance 30 && { pick vocab 50257 51200 32001; sets+=(--set model.vocab=$vocab); } ;;
  esac
  pick backend cpu cpu cuda
  [ "$base" = n17 ] || [ "$base" = n39 ] && pick backend cuda cuda cpu
  pick gpus 1 2 3 4 5 6 7 8 11 12 13 16 24 32
  case $base in n17|n39) pick gpus 1 4 7 8 13 16 24 32 48 64 96 ;; esac
  # a node size of its own sometimes (primes among them)
  chance 30 && { pick dpn 1 2 3 4 6 8; sets+=(--set cluster.devices_per_node=$dpn); }
  # most counts a whole number of nodes (the rest test the refusal)
  node=$(sed -n 's/.*devices_per_node = \([0-9]*\).*/\1/p' "$plan" | head -1)
  for s in "${sets[@]}"; do case $s in cluster.devices_per_node=*) node=${s#*=} ;; esac; done
  chance 60 && [ "$gpus" -gt "${node:-1}" ] && gpus=$((gpus / node * node))
  pick prec fp32 bf16 fp16; sets+=(--set precision=$prec)
  pick clip 0 1.0; sets+=(--set clip_grad_norm=$clip)
  pick batch 1 2 3 4 7 8 12 13 16 17 24 31 32 64 96 512
  chance 25 && case $base in
    tiny|llama) pick mem 0.002 0.005 0.012 0.05; sets+=(--set cluster.device.memory_gib=$mem) ;;
    *) pick mem 4 8 16 24 40; sets+=(--set cluster.device.memory_gib=$mem) ;;
  esac
  pick obj time time memory; pick top 1 2 3 5 8 40
  extra=(); chance 15 && { pick cap 1 2 5; extra=(--max-priced "$cap"); }
  chance 10 && extra+=(--scaling)
  args=("$plan" "${sets[@]}" "${extra[@]}" --gpus "$gpus" --backend "$backend" --global-batch "$batch" --objective "$obj" --top "$top")
  printf '%s\n' "${args[*]}" >"$D/args"
  [ "$backend" = cpu ] && n_cpu=$((n_cpu + 1)) || n_cuda=$((n_cuda + 1))

  # ---- the search ----
  rc=0
  nice "$WEFT" plan "${args[@]}" --print-sets -o "$D/best.lua" >"$D/out.txt" 2>"$D/err.txt" || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 1 ]; then
    fail exit "$c" "exit $rc: weft plan ${args[*]}"; continue
  fi
  if [ "$rc" = 1 ]; then
    n_refused=$((n_refused + 1))
    n_err=$(grep -c 'error' "$D/err.txt")
    others=$(grep -v '^weft: \(error:\|searched in\)' "$D/err.txt" | grep -c .)
    if [ "$n_err" != 1 ] || [ "$others" != 0 ]; then
      fail message "$c" "$n_err error lines, $others others: weft plan ${args[*]}"; sed 's/^/    /' "$D/err.txt"
    elif ! grep '^weft: error:' "$D/err.txt" |
        grep -q -E 'needs|nearest feasible|valid:|fits on [0-9]+ GPUs|--gpus|--global-batch|write the plan into|--set'; then
      fail vague "$c" "weft plan ${args[*]}: $(grep '^weft: error:' "$D/err.txt")"
    fi
    echo "case $c refused: $(grep '^weft: error:' "$D/err.txt" | cut -c1-160)"
    # a suggested global batch must be one some mesh's dp divides
    nb=$(sed -n 's/^weft: error: .*nearest feasible: --global-batch \([0-9]*\)$/\1/p' "$D/err.txt")
    if [ -n "$nb" ]; then
      nargs=("${args[@]}"); nargs[${#nargs[@]} - 5]=$nb
      nice "$WEFT" plan "${nargs[@]}" >/dev/null 2>"$D/err_nb.txt"
      ! grep -q 'data-parallel size dividing' "$D/err_nb.txt" ||
        fail suggestion "$c" "--global-batch $nb, suggested, is refused too: $(grep -m1 error "$D/err_nb.txt")"
    fi
    # a GPU count named is one where a layout fits
    ng=$(sed -n 's/^weft: error: .*\(needs at least\|fits on\) \([0-9]*\) GPUs.*$/\2/p' "$D/err.txt")
    if [ -n "$ng" ]; then
      nargs=("${args[@]}"); nargs[${#nargs[@]} - 9]=$ng
      nice "$WEFT" plan "${nargs[@]}" >/dev/null 2>"$D/err_ng.txt" ||
        fail suggestion "$c" "--gpus $ng, named, is refused: $(grep -m1 error "$D/err_ng.txt")"
    fi
    # refusal parity on the base plan with the cluster --gpus gives
    cl=(); [ -f "$D/best.lua" ] && fail written "$c" "exit 1 but a plan was written"
    src=("$plan" "${sets[@]}" --set batch.global="$batch")
  else
    n_ok=$((n_ok + 1))
    grep -q 'error' "$D/err.txt" && fail message "$c" "exit 0 with an error on stderr: $(grep -m1 error "$D/err.txt")"
    echo "case $c accepted: $(grep '^1  *dp ' "$D/out.txt" | cut -c1-110)"
    [ -f "$D/best.lua" ] || { fail written "$c" "exit 0 but no plan written"; continue; }
    if ! nice "$WEFT" check "$D/best.lua" --backend "$backend" >"$D/check.txt" 2>&1; then
      fail check "$c" "weft check rejects the written plan: $(grep 'error' "$D/check.txt" | head -1)"
    fi
    nice "$WEFT" simulate "$D/best.lua" --backend "$backend" >"$D/sim.txt" 2>&1
    [ $? -lt 128 ] || fail signal "$c" "simulate of the written plan ended by a signal"
    if ! grep -q 'fits: ' "$D/sim.txt" || grep -q 'does not fit' "$D/sim.txt"; then
      fail fit "$c" "simulate: the written plan does not fit ($(grep -m1 'fit' "$D/sim.txt"))"
    fi
    t_table=$(row_field "$D/out.txt" 1 -2)
    t_sim=$(sed -n 's/^iteration \([0-9.]*\) s.*/\1/p' "$D/sim.txt")
    [ -n "$t_table" ] && [ "$t_table" = "$t_sim" ] ||
      fail time "$c" "table's step $t_table s, simulate's $t_sim s"
    read -r dp tp pp < <(sed -n 's/^1  *dp \([0-9]*\) tp \([0-9]*\)[^ ]* pp \([0-9]*\) .*/\1 \2 \3/p' "$D/out.txt")
    grep -q "^mesh  *dp $dp x tp $tp x pp $pp = " "$D/check.txt" ||
      fail mesh "$c" "written mesh $(grep -m1 '^mesh' "$D/check.txt") is not row 1's dp $dp tp $tp pp $pp"
    nice "$WEFT" plan "${args[@]}" --print-sets -o "$D/best2.lua" >"$D/out2.txt" 2>/dev/null
    cmp -s "$D/out.txt" "$D/out2.txt" || fail determinism "$c" "two runs print different tables"
    cmp -s "$D/best.lua" "$D/best2.lua" || fail determinism "$c" "two runs write different plans"
    if [ "$obj" = memory ]; then
      least=$(awk '$2 == "dp" && $1 ~ /^[0-9]+$/ { for (i = 1; i <= NF; i++) if ($i ~ /%$/) { m = $(i + 1) + 0; if (n++ == 0 || m < l) l = m; break } }
        END { print l }' "$D/out.txt")
      m1=$(row_field "$D/out.txt" 1 1)
      awk -v a="$m1" -v b="$least" 'BEGIN { exit !(a != "" && a + 0 <= b + 0) }' ||
        fail memory "$c" "objective memory: row 1 needs $m1 GiB, another row $least"
    fi
    if [ "$backend" = cpu ] && [ "$base" != n17 ] && [ "$base" != n39 ]; then
      [ "$base" = gpt2 ] || [ "$base" = vlm ] && trainable=0 || trainable=1
      if ! nice "$WEFT" compile "$D/best.lua" -o "$D/prog" >"$D/compile.txt" 2>&1; then
        fail compile "$c" "weft compile rejects the written plan: $(grep -m1 error "$D/compile.txt")"
      elif [ "$trainable" = 1 ] && [ $((n_ok % TRAIN_EVERY)) = 1 ] && [ "$(grep -c . "$D/prog/ranks.txt" 2>/dev/null || echo 9)" -le 8 ]; then
        # build it and train 2 steps on a synthetic language of its vocabulary
        nice "$WEFT" data synth -o "$D/synth.bin" --tokens 50000 --vocab "$vocab" --seed 7 >/dev/null 2>&1
        if nice "$WEFT" compile "$D/best.lua" -o "$D/run" --set data.train="$D/synth.bin" --set train.steps=2 \
              --set train.log_every=1 >/dev/null 2>&1 &&
           configure "$D/run" "$D/run/build" >"$D/run.cmake.log" 2>&1 &&
           nice cmake --build "$D/run/build" >"$D/run.build.log" 2>&1 &&
           timeout 300 nice "$D/run/launch.sh" --quiet >"$D/run.log" 2>&1; then
          n_trained=$((n_trained + 1))
        else
          fail train "$c" "the written plan does not build or train 2 steps (see $D/run*.log)"
        fi
      fi
    fi
    src=("$D/best.lua")
  fi

  # ---- refusal parity: simulate and compile, same backend ----
  layouts=()
  while IFS= read -r l; do layouts+=("$(layout_sets "$l")"); done < <(
    sed -n '/^best rejected/,/^[^ ]/s/^    \(dp [0-9].* b[0-9.]*\)\( \[[^]]*\]\)\?\( bind off\)\?  .*/\1/p' "$D/out.txt" | head -2)
  # two random meshes of the case's ranks (tp and pp divisors of them, dp the rest)
  world=$gpus
  [ "$rc" = 0 ] && world=$(sed -n 's/^mesh .* = \([0-9]*\) ranks.*/\1/p' "$D/check.txt" | head -1)
  divs=(); for ((q = 1; q <= ${world:-1}; q++)); do [ $((world % q)) = 0 ] && divs+=("$q"); done
  for k in 1 2; do
    pick rtp "${divs[@]}"; rdivs=(); for q in "${divs[@]}"; do [ $((world / rtp % q)) = 0 ] && rdivs+=("$q"); done
    pick rpp "${rdivs[@]}"; rdp=$((world / rtp / rpp)); pick rmb 1 2 3 4 8
    pick rsch gpipe 1f1b interleaved zb-h1 pipedream-2bw; pick rz 0 1 2 3; pick rrc none selective full
    rv=1; [ "$rsch" = interleaved ] && pick rv 2 3 4
    pick rsp false false true; pick roff none none cpu
    layouts+=("--set mesh.dp=$rdp --set mesh.tp=$rtp --set mesh.pp=$rpp --set mesh.sp=$rsp --set batch.micro=$rmb --set pipeline.schedule=$rsch --set pipeline.virtual=$rv --set zero=$rz --set recompute=$rrc --set offload.optimizer=$roff")
  done
  # the cluster --gpus chose, for the base plan when nothing was written
  if [ "$rc" = 1 ]; then
    dpn0=$(sed -n 's/.*devices_per_node = \([0-9]*\).*/\1/p' "$plan" | head -1)
    for s in "${sets[@]}"; do case $s in cluster.devices_per_node=*) dpn0=${s#*=} ;; esac; done
    d=$(( gpus < dpn0 ? gpus : dpn0 ))
    [ $((gpus % d)) = 0 ] && src+=(--set cluster.devices_per_node=$d --set cluster.nodes=$((gpus / d)))
  fi
  for lay in "${layouts[@]}"; do
    # shellcheck disable=SC2086
    nice "$WEFT" simulate "${src[@]}" $lay --backend "$backend" >"$D/p_sim.txt" 2>&1; rs=$?
    rm -rf "$D/p_prog"
    # shellcheck disable=SC2086
    nice "$WEFT" compile "${src[@]}" $lay --backend "$backend" -o "$D/p_prog" >"$D/p_comp.txt" 2>&1; rcp=$?
    n_parity=$((n_parity + 1))
    [ "$rs" -lt 128 ] && [ "$rcp" -lt 128 ] ||
      fail signal "$c" "simulate exit $rs, compile exit $rcp (a signal): ${src[*]} $lay --backend $backend"
    if [ $((rs == 0)) != $((rcp == 0)) ]; then
      fail parity "$c" "simulate exit $rs, compile exit $rcp: ${src[*]} $lay --backend $backend"
      echo "    simulate: $(grep -m1 'error' "$D/p_sim.txt")"
      echo "    compile:  $(grep -m1 'error' "$D/p_comp.txt")"
    fi
  done
  rm -rf "$D/prog" "$D/p_prog"
done

echo "seed $SEED: $CASES cases ($n_cpu cpu, $n_cuda cuda): $n_ok accepted, $n_refused refused;" \
  "$n_trained trained 2 steps; $n_parity parity pairs; $n_fail failures"
for k in "${!fails[@]}"; do echo "  $k: ${fails[$k]}"; done | sort
[ "$n_fail" = 0 ]
