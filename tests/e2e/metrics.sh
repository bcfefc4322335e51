#!/usr/bin/env bash
# Per-step metrics: tokens/s and MFU in --metrics agree with a recomputation
# from the step's ms and the plan's own numbers (global batch x seq tokens;
# 6N + 12 L h s FLOPs per token with N from `weft check`; ranks; the CPU
# device's fp32 peak from the cluster description), and each rank's arenas as
# allocated agree with the compiler's memory plan (compiler/memory.c counts
# every arena the runtime allocates): rank 0 at most the plan and within 0.1%
# of it, every rank's ratio 1.000 as the log prints it (measured: exact); the
# summary's peak resident memory (getrusage) at least those arenas.
source "$(dirname "$0")/lib.sh"
DATA=$(make_data)
L=2 H=64 S=64
SET=(--set model.layers=$L --set model.hidden=$H --set model.heads=4 --set model.seq=$S
     --set batch.micro=4 --set buckets.mb=0.1)
N=$("$WEFT" check plans/tiny.lua "${SET[@]}" | sed -n 's/^params .*(\([0-9]*\))$/\1/p')
PEAK=$(sed -n 's/.*CPU = {.* fp32 = \([0-9.]*\),.*/\1/p' compiler/lua/prelude.lua)
check "the CPU device's fp32 peak is known ($PEAK TFLOP/s)" test -n "$PEAK"

# recompute NAME GLOBAL WORLD: every line's tokens_per_s and mfu within 1e-4
recompute() {
  awk -v tokens=$(( $2 * S )) -v world=$3 -v peak="$PEAK" -v fpt=$(( 6 * N + 12 * L * H * S )) '
    function num(key, line) { if (!match(line, "\"" key "\": [-0-9.e+]*")) return -1
                              line = substr(line, RSTART, RLENGTH); sub(/.*: /, "", line); return line + 0 }
    function off(a, b) { d = (a - b) / b; return d < 0 ? -d : d }
    { ms = num("ms", $0); tps = tokens / (ms / 1000); mfu = fpt * tokens / (ms / 1000 * world * peak * 1e12)
      if (off(num("tokens_per_s", $0), tps) > 1e-4 || off(num("mfu", $0), mfu) > 1e-4) bad++; n++ }
    END { exit !(n > 0 && bad == 0) }' "$WORK/$1.jsonl"
}
# memory_ok NAME: the last metrics line (rank 0) and the log's largest ratio over ranks
memory_ok() {
  tail -n 1 "$WORK/$1.jsonl" | awk '{ match($0, /"mem_bytes": [0-9]+/); a = substr($0, RSTART + 13, RLENGTH - 13) + 0
    match($0, /"mem_planned_bytes": [0-9]+/); p = substr($0, RSTART + 21, RLENGTH - 21) + 0
    exit !(p > 0 && a >= 0.999 * p && a <= p) }' &&
  awk '/^memory:/ { sub(/.*largest over ranks /, ""); r = $0 + 0; found = 1 }
       END { exit !(found && r >= 0.999 && r <= 1.0) }' "$WORK/$1.log"
}

while read -r name dp tp pp extra; do
  world=$((dp * tp * pp)) global=$((4 * dp * (pp > 1 ? 2 : 1)))
  build_plan "$name" plans/tiny.lua "${SET[@]}" --set mesh.dp=$dp --set mesh.tp=$tp --set mesh.pp=$pp \
    --set batch.global=$global $extra
  "$WORK/$name/launch.sh" --steps 3 --data "$DATA" --metrics "$WORK/$name.jsonl" > "$WORK/$name.log" 2>&1 < /dev/null
  check "$name: tokens_per_s and mfu recomputed from ms, tokens, 6N + 12Lhs, $world rank(s), $PEAK TFLOP/s" \
    recompute "$name" $global $world
  check "$name: new keys come after the old ones" \
    grep -q '^{"step": 1, "loss": .*, "ms": [0-9.]*, "tokens_per_s": .*, "mfu": .*, "mem_bytes": [0-9]*, "mem_planned_bytes": [0-9]*, "device_mem_used_bytes": null}$' "$WORK/$name.jsonl"
  check "$name: allocated as planned, every rank ($(grep '^memory:' "$WORK/$name.log"))" memory_ok "$name"
  check "$name: the log shows MFU per step" grep -q '| MFU [0-9.]*%$' "$WORK/$name.log"
  # every arena is written at setup (zeroed), so the process holds at least them
  check "$name: peak RSS at least the allocated arenas ($(grep '^peak RSS:' "$WORK/$name.log"))" \
    awk '/^peak RSS:/ { rss = $5 + 0; a = $(NF - 1) + 0; found = 1 } END { exit !(found && rss >= a && a > 0) }' \
    "$WORK/$name.log"
done <<'LAYOUTS'
dp2 2 1 1
pp2 1 1 2
zero3 2 1 1 --set zero=3
LAYOUTS

echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
