#!/usr/bin/env bash
# Model-state memory per rank as `weft check` reports it, against hand-computed
# values (the full grid of three models, dp 1, 2, 4, ZeRO 0 / 1 and three
# precisions is tests/unit/test_passes_memory.c's, on the memory model itself;
# here one model checks that the report prints it): (4 + 4 + 8) Psi in fp32 (parameters,
# gradients, AdamW moments; K = 8 since the weights are their own master
# copy), (2 + 4 + 12) Psi in bf16 / fp16 (the CPU keeps 16-bit parameters in
# 2 bytes, compiler/param16.c, plus the float scratch one op's weights are
# widened into: the largest op's, the embedding's wte and wpe or c_fc's
# weight and bias, 4 max((V + s) h, 4 h^2 + 4 h) bytes; gradients as rounded floats, compiler/memory.c; K = 12: fp32 master,
# m and v); the optimizer part divided by dp under ZeRO-1 (dp rank 0's shard:
# each bucket's part rounded up); ZeRO-1 reduces each bucket in place in the
# whole float gradients (runtime/common/zero.c), no shard beside them.
# Then ZeRO-2 and ZeRO-3 in fp32, bf16 and fp16 (below).
# Psi = 12 L h^2 + 13 L h + (V + s) h + 2 h for GPT-2 with a tied LM head.
source "$(dirname "$0")/lib.sh"
# bytes from "3.21 MiB" / "512 B" / "1.50 GiB"
to_bytes() { awk '{ u = $2; v = $1; f = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 1; printf "%.0f", v * f }'; }
widened() { local e=$((($3 + $2) * $1)) f=$((4 * $1 * $1 + 4 * $1)); echo $((4 * (e > f ? e : f))); }  # h s V
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005 * b + 8) }'; }
while read -r L h heads s V; do
  psi=$(( 12 * L * h * h + 13 * L * h + (V + s) * h + 2 * h ))
  for dp in 2; do
    for zero in 0 1; do
    for prec in fp32 bf16; do
      # float gradients (WEFT_GRAD16=0): the 16-bit ones (2 Psi + one op's
      # widened + the sums' staging) are test_passes_memory's and grad16.sh's
      out=$(WEFT_GRAD16=0 "$WEFT" check plans/tiny.lua --set model.layers=$L --set model.hidden=$h --set model.heads=$heads \
            --set model.seq=$s --set model.vocab=$V --set mesh.dp=$dp --set batch.micro=4 \
            --set batch.global=$((4 * dp)) --set zero=$zero --set precision=$prec)
      count=$(sed -n 's/^params .*(\([0-9]*\))$/\1/p' <<<"$out")
      pbytes=$(sed -n 's/^  parameters *//p' <<<"$out" | to_bytes)
      gbytes=$(sed -n 's/^  gradients *//p' <<<"$out" | to_bytes)
      obytes=$(sed -n 's/^  optimizer *//p' <<<"$out" | to_bytes)
      div=1; [ $zero = 1 ] && div=$dp
      P=4 K=8 S=0; [ $prec = fp32 ] || { K=12 P=2 S=$(widened $h $s $V); }
      what="L$L h$h s$s V$V dp $dp zero $zero $prec: Psi $psi"
      [ $prec = fp32 ] && check "$what: parameter count" test "$count" = "$psi"
      check "$what: parameters $P Psi + $S = $((P * psi + S)) ~ $pbytes" near "$pbytes" $((P * psi + S))
      G=$((4 * psi))
      check "$what: gradients $G ~ $gbytes" near "$gbytes" $G
      check "$what: AdamW $K Psi / $div = $((K * psi / div)) ~ $obytes" near "$obytes" $((K * psi / div))
    done
    done
  done
done <<'MODELS'
6 96 6 32 1000
MODELS

# ZeRO-2 and ZeRO-3 (dp 2 and 4): the shards are 4 Psi / dp; with one bucket
# for everything the bucket buffer (ZeRO-2) and the gather buffer (ZeRO-3)
# are the whole 4 Psi.  With one bucket per parameter (buckets.mb = 0) the
# plan keeps alive at once, besides vectors (at most 64 h floats):
#   bucket buffers: wte (its gradient is first written by the LM head, last by
#     the embedding) + the MLP matrix being written + the one whose
#     reduce-scatter overlaps it: 4 (V h + 2 * 4 h^2);
#   gather buffers: the larger of wte (alone at either end of the model) and
#     an MLP matrix in use + the next one prefetched: 4 max(V h, 2 * 4 h^2).
between() { awk -v v="$1" -v lo="$2" -v hi="$3" 'BEGIN { exit !(v >= lo && v <= hi) }'; }
# zero_states L h heads s V dp zero mb PREC E K [P]: one plan's rows against
# hand-computed values, E bytes per parameter or gradient element and K bytes
# of optimizer state per parameter (fp32: 4 and 8; bf16 / fp16: 4 and 12);
# P the bytes of a parameter element (ZeRO-2's whole ones, ZeRO-3's shard and
# gather buffers), E unless given (bf16 / fp16: 2, with the float scratch of
# one op's widened weights, as above).
zero_states() {
  local L=$1 h=$2 heads=$3 s=$4 V=$5 dp=$6 zero=$7 mb=$8 prec=$9 E=${10} K=${11} P=${12:-${10}} S=0
  local psi=$(( 12 * L * h * h + 13 * L * h + (V + s) * h + 2 * h )) buf gat
  out=$("$WEFT" check plans/tiny.lua --set model.layers=$L --set model.hidden=$h --set model.heads=$heads \
        --set model.seq=$s --set model.vocab=$V --set mesh.dp=$dp --set batch.micro=4 \
        --set batch.global=$((4 * dp)) --set zero=$zero --set buckets.mb=$mb --set precision=$prec)
  field() { sed -n "s/^  $1 *//p" <<<"$out" | to_bytes; }
  local what="$prec L$L h$h s$s V$V dp $dp zero $zero buckets $mb MiB: Psi $psi"
  check "$what: AdamW $K Psi / dp ~ $(field optimizer)" near "$(field optimizer)" $((K * psi / dp))
  check "$what: gradient shard $E Psi / dp ~ $(field 'grad shard')" near "$(field 'grad shard')" $((E * psi / dp))
  if [ "$mb" = 1000 ]; then
    buf=$((E * psi)) gat=$((E * psi))
    check "$what: bucket buffer $E Psi" near "$(field 'bucket bufs')" $buf
  else
    buf=$((E * (V * h + 8 * h * h))) gat=$((E * (V * h > 8 * h * h ? V * h : 8 * h * h)))
    check "$what: bucket buffers $E (V h + 8 h^2) = $buf (+ vectors) ~ $(field 'bucket bufs')" \
      between "$(field 'bucket bufs')" $buf $((buf + 64 * E * h))
  fi
  check "$what: gradients = shard + buffers ~ $(field gradients)" \
    near "$(field gradients)" $((E * psi / dp + $(field 'bucket bufs')))
  if [ "$zero" = 3 ]; then
    [ "$P" = "$E" ] || S=$(widened $h $s $V)
    gat=$((gat / E * P))
    check "$what: parameter shard $P Psi / dp" near "$(field 'param shard')" $((P * psi / dp))
    if [ "$mb" = 1000 ]; then
      check "$what: gather buffer $P Psi" near "$(field 'gather bufs')" $gat
    else
      check "$what: gather buffers $P max(V h, 8 h^2) = $gat (+ vectors) ~ $(field 'gather bufs')" \
        between "$(field 'gather bufs')" $gat $((gat + 64 * P * h))
    fi
    check "$what: parameters = shard + gather buffers + $S ~ $(field parameters)" \
      near "$(field parameters)" $((P * psi / dp + $(field 'gather bufs') + S))
  else
    [ "$P" = "$E" ] || S=$(widened $h $s $V)
    check "$what: parameters $P Psi + $S (whole)" near "$(field parameters)" $((P * psi + S))
  fi
}
while read -r L h heads s V; do
  for dp in 2 4; do for zero in 2 3; do for mb in 1000 0; do
    zero_states $L $h $heads $s $V $dp $zero $mb fp32 4 8
  done; done; done
done <<'MODELS'
2 64 4 64 256
4 128 4 128 256
6 96 6 32 1000
MODELS
# zero_prefetch_mb (DeepSpeed's stage3_prefetch_bucket_size): 0 MiB prefetches
# nothing, like zero_prefetch = 0; more MiB gather further ahead, so the
# gather buffers grow.
gbufs() { "$WEFT" check plans/tiny.lua --set mesh.dp=2 --set zero=3 --set buckets.mb=0.02 "$@" |
          sed -n 's/^  gather bufs *//p' | to_bytes; }
check "zero_prefetch_mb = 0 keeps the buffers of zero_prefetch = 0" \
  test "$(gbufs --set zero_prefetch_mb=0)" = "$(gbufs --set zero_prefetch=0)"
check "zero_prefetch_mb = 1 gathers further ahead than 0.1 (larger gather buffers)" \
  test "$(gbufs --set zero_prefetch_mb=1)" -gt "$(gbufs --set zero_prefetch_mb=0.1)"
# ZeRO over dp 3: every bucket padded to a multiple of 3 with fewer than 3
# floats (the --dump=memory extents), the report's "ZeRO padding" row their
# sum, and the parameter arena Psi + that sum floats (dp 2: no padding at all).
pad3=(--set mesh.dp=3 --set batch.global=24 --set batch.micro=8 --set zero=2 --set buckets.mb=0.05)
read -r nb bad pads < <("$WEFT" check plans/tiny.lua "${pad3[@]}" --dump=memory |
  sed -n 's/^  bucket [0-9]* @[0-9]*+\([0-9]*\) (padding \([0-9]*\)).*/\1 \2/p' |
  awk '{ n++; bad += $1 % 3 != 0 || $2 >= 3; s += $2 } END { print n, bad, s }')
row=$("$WEFT" check plans/tiny.lua "${pad3[@]}" | sed -n 's/^  ZeRO padding *\([0-9]*\) floats.*/\1/p')
check "dp 3 ZeRO-2: $nb buckets, each a multiple of 3 floats with < 3 of padding ($bad not)" test "$nb" -gt 0 -a "$bad" = 0
check "dp 3 ZeRO-2: the ZeRO padding row ($row floats) is the buckets' padding ($pads)" test "${row:-none}" = "$pads" -a "$pads" -gt 0
arena=$("$WEFT" check plans/tiny.lua "${pad3[@]}" --dump=memory | sed -n 's/^stage 0 arenas: params \([0-9]*\),.*/\1/p')
psi=$("$WEFT" check plans/tiny.lua "${pad3[@]}" | sed -n 's/^params .*(\([0-9]*\))$/\1/p')
check "dp 3 ZeRO-2: parameter arena $arena floats = Psi $psi + padding $pads" test "$arena" = $((psi + pads))
check "dp 2 ZeRO-2: no padding row" bash -c "! '$WEFT' check plans/tiny.lua --set zero=2 --set buckets.mb=0.05 | grep -q 'ZeRO padding'"
# Offloading the ZeRO-3 parameter shard moves it to the host line.
out=$("$WEFT" check plans/tiny.lua --set mesh.dp=2 --set batch.micro=4 --set batch.global=8 --set zero=3 \
      --set offload.params=cpu)
shard=$(sed -n 's/^  param shard *//p' <<<"$out" | to_bytes)
check "offload.params: host holds the parameter shard" near "$(sed -n 's/^  host (offload) *//p' <<<"$out" | to_bytes)" "$shard"
check "offload.params: parameters on the device are the gather buffers only" \
  near "$(sed -n 's/^  parameters *//p' <<<"$out" | to_bytes)" "$(sed -n 's/^  gather bufs *//p' <<<"$out" | to_bytes)"
# on CUDA, the device's AdamW would then update the host shard over PCIe: said
check "offload.params alone on CUDA: a note says AdamW reaches the host shard over PCIe" bash -c "
  '$WEFT' check plans/tiny.lua --backend cuda --set mesh.dp=2 --set zero=3 --set offload.params=cpu |
    grep -q '^  note .*offload.params without offload.optimizer' &&
  ! '$WEFT' check plans/tiny.lua --backend cuda --set mesh.dp=2 --set zero=3 --set offload.params=cpu \
      --set offload.optimizer=cpu | grep -q '^  note .*offload.params without'"
# ZeRO-2 and ZeRO-3 in bf16 / fp16: every row above (floats: 4 bytes per
# gradient element, as the runtime allocates them; parameters in 2 bytes:
# ZeRO-2's whole ones, ZeRO-3's shard and gather buffers), and the optimizer
# 12 Psi / dp (fp32 master, m and v, all sharded).
while read -r L h heads s V; do
  for dp in 2 4; do for zero in 2 3; do for mb in 1000 0; do for prec in bf16 fp16; do
    zero_states $L $h $heads $s $V $dp $zero $mb $prec 4 12 2
  done; done; done; done
done <<'MODELS'
2 64 4 64 256
6 96 6 32 1000
MODELS
# bf16 ZeRO-3 with both offloads: the host holds the 12 Psi / dp optimizer
# and the 2 Psi / dp parameter shard (16-bit); the device keeps the gather
# buffers and the float scratch of one op's widened weights.
psi=$(( 12 * 2 * 64 * 64 + 13 * 2 * 64 + (256 + 64) * 64 + 2 * 64 ))
out=$("$WEFT" check plans/tiny.lua --set model.layers=2 --set model.hidden=64 --set model.heads=4 \
      --set model.seq=64 --set model.vocab=256 --set mesh.dp=2 --set batch.micro=4 --set batch.global=8 \
      --set zero=3 --set precision=bf16 --set offload.params=cpu --set offload.optimizer=cpu)
check "bf16 ZeRO-3 offload: host (12 + 2) Psi / dp = $((14 * psi / 2))" \
  near "$(sed -n 's/^  host (offload) *//p' <<<"$out" | to_bytes)" $((14 * psi / 2))
check "bf16 ZeRO-3 offload: no optimizer state on the device" \
  test "$(sed -n 's/^  optimizer *//p' <<<"$out" | to_bytes)" = 0
check "bf16 ZeRO-3 offload: parameters on the device are the gather buffers and the scratch only" \
  near "$(sed -n 's/^  parameters *//p' <<<"$out" | to_bytes)" \
    $(($(sed -n 's/^  gather bufs *//p' <<<"$out" | to_bytes) + $(widened 64 64 256)))
echo "$passed passed, $failed failed"
[ $failed = 0 ]
