#!/usr/bin/env bash
# Weft on the CPU against PyTorch, whole training steps (fp32, B 4 x T 256,
# vocab 50304) on two GPTs: small (4 layers, hidden 256, 4 heads) and GPT-2
# 124M (12 layers, hidden 768, 12 heads).  Per model and round, alternated:
# Weft 1 rank x all cores' threads, Weft 2 ranks (the cores shared), PyTorch
# eager and torch.compile (bench/torch_gpt.py, same threads).  Prints each
# run's tokens/s, the medians, each against torch.compile, and the model
# FLOPs over the whole step as a fraction of the sgemm rate measured here
# (bench/sgemm_rate: OpenBLAS, all cores, the model's GEMM shapes).
#
#   bash bench/cpu_compare.sh      (from the repository root, after scripts/build.sh)
#
# ROUNDS (3), STEPS (6 timed, after 2 warm-up), MODELS ("small gpt2"),
# SKIP_TORCH=1 (Weft only).  PyTorch comes from PyPI into a virtual environment
# under VENV (default ~/.cache/weft-bench-venv), made once (pip install torch);
# TORCH_INDEX=URL installs from another index instead (e.g. PyTorch's CPU-only
# wheels, far smaller).  Everything runs under nice.
set -euo pipefail
cd "$(dirname "$0")/.."
WEFT=${WEFT:-build/compiler/weft}
ROUNDS=${ROUNDS:-3} STEPS=${STEPS:-6} MODELS=${MODELS:-"small gpt2"}
CORES=$(nproc)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/weft-cpu-compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

PY=
if [ -z "${SKIP_TORCH:-}" ]; then
  VENV=${VENV:-$HOME/.cache/weft-bench-venv}
  if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch" 2>/dev/null; then
    echo "== installing PyTorch into $VENV (once)"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q ${TORCH_INDEX:+--index-url "$TORCH_INDEX"} torch numpy
  fi
  PY=$VENV/bin/python
  echo "== $("$PY" -c 'import torch; print("PyTorch", torch.__version__)')"
fi

"$WEFT" data synth -o "$WORK/data.bin" --vocab 50304 --tokens 2000000 >/dev/null
shape() {  # shape MODEL -> layers hidden heads
  case $1 in small) echo "4 256 4" ;; gpt2) echo "12 768 12" ;; *) echo "unknown model $1" >&2; exit 1 ;; esac
}
build() {  # build NAME MODEL DP
  read -r L C H <<<"$(shape "$2")"
  "$WEFT" compile plans/tiny.lua -o "$WORK/$1" --set model.layers=$L --set model.hidden=$C \
    --set model.heads=$H --set model.seq=256 --set model.vocab=50304 --set data.train="$WORK/data.bin" \
    --set train.steps=$((STEPS + 2)) --set train.log_every=1 --set batch.global=4 \
    --set batch.micro=$((4 / $3)) --set mesh.dp=$3 --set buckets.mb=25 >/dev/null 2>&1
  cmake -S "$WORK/$1" -B "$WORK/$1/build" >/dev/null && nice cmake --build "$WORK/$1/build" >/dev/null
}
# tokens/s of the timed steps (the log's steps after the first two) and model GFLOP/s
weft_run() {  # weft_run NAME -> "tokens/s GFLOP/s"
  nice "$WORK/$1/launch.sh" --metrics "$WORK/$1.jsonl" >"$WORK/$1.log" 2>&1
  awk -v skip=2 'NR > skip { sub(/.*"ms": /, ""); split($0, f, /[,}]/); ms += f[1]; n++ }
    END { print n, ms }' "$WORK/$1.jsonl" | {
    read -r n ms
    fpt=$(sed -n 's/.*model FLOPs \([0-9.]*\) GFLOP\/s.*/\1/p' "$WORK/$1.log")
    tps=$(sed -n 's/^throughput: \([0-9.]*\) tokens\/s.*/\1/p' "$WORK/$1.log")
    # GFLOP per token from the summary's pair, then over the timed steps only
    awk -v n="$n" -v ms="$ms" -v f="$fpt" -v t="$tps" 'BEGIN {
      tok = n * 4 * 256 / (ms / 1000); printf "%.1f %.2f\n", tok, (t > 0 ? f / t * tok : 0) }'
  }
}
torch_run() {  # torch_run MODEL [--compile] -> tokens/s
  read -r L C H <<<"$(shape "$1")"
  nice "$PY" bench/torch_gpt.py --layers $L --hidden $C --heads $H --threads "$CORES" --steps "$STEPS" ${2:-} |
    sed -n 's/^tokens\/s //p'
}
med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# the sgemm rate over the model's GEMM shapes (OpenBLAS, all cores, the
# runtime's kernel selection), measured in every round beside the runs: on a
# shared or virtual machine one measurement can be 10% off either way
sgemm_run() {  # sgemm_run MODEL -> GFLOP/s
  read -r L C H <<<"$(shape "$1")"
  nice build/bench/sgemm_rate 1024 "$C" 50304 | sed -n 's/.*mean over the model.s shapes: \([0-9.]*\).*/\1/p'
}
for m in $MODELS; do
  build "$m.one" "$m" 1
  build "$m.two" "$m" 2
done
for r in $(seq "$ROUNDS"); do
  for m in $MODELS; do
    s=$(sgemm_run "$m"); echo "$s" >>"$WORK/$m.sgemm"
    read -r t g <<<"$(weft_run "$m.one")"; echo "$t" >>"$WORK/$m.one.t"; echo "$g" >>"$WORK/$m.one.g"
    read -r t2 g2 <<<"$(weft_run "$m.two")"; echo "$t2" >>"$WORK/$m.two.t"; echo "$g2" >>"$WORK/$m.two.g"
    line="round $r $m: sgemm $s GFLOP/s, weft 1x$CORES $t tok/s, weft ${CORES}x1 $t2"
    if [ -n "$PY" ]; then
      e=$(torch_run "$m"); echo "$e" >>"$WORK/$m.eager.t"
      c=$(torch_run "$m" --compile); echo "$c" >>"$WORK/$m.compile.t"
      line="$line, torch eager $e, torch.compile $c"
    fi
    echo "$line"
  done
done
echo "== medians (tokens/s; x torch.compile; model GFLOP/s over the step / the sgemm rate's median)"
for m in $MODELS; do
  rate=$(med <"$WORK/$m.sgemm")
  echo "$m: sgemm, median over the rounds: $rate GFLOP/s (range $(sort -g "$WORK/$m.sgemm" | sed -n '1p;$p' | paste -sd- -))"
  c=; [ -n "$PY" ] && c=$(med <"$WORK/$m.compile.t")
  for k in one two eager compile; do
    [ -f "$WORK/$m.$k.t" ] || continue
    t=$(med <"$WORK/$m.$k.t")
    extra=
    [ -n "$c" ] && extra=$(awk -v t="$t" -v c="$c" 'BEGIN { printf "  %.2fx torch.compile", t / c }')
    [ -f "$WORK/$m.$k.g" ] && extra="$extra$(med <"$WORK/$m.$k.g" | awk -v r="$rate" '{ printf "  %.1f GFLOP/s = %.0f%% of sgemm", $1, 100 * $1 / r }')"
    name=$k; [ $k = one ] && name="weft 1x$CORES"; [ $k = two ] && name="weft ${CORES}x1"
    printf "%-6s %-14s %8.1f%s\n" "$m" "$name" "$t" "$extra"
  done
done
