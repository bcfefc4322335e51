#!/usr/bin/env bash
# Model-state memory per rank as `weft check` reports it, against hand-computed
# values for three models and three data-parallel sizes, with and without
# ZeRO-1, in fp32, bf16 and fp16: (4 + 4 + 8) Psi in fp32 (parameters,
# gradients, AdamW moments; K = 8 since the weights are their own master
# copy), (2 + 2 + 12) Psi in bf16 / fp16 (16-bit parameters and gradients;
# K = 12: fp32 master, m and v); the optimizer part divided by dp under ZeRO-1.
# Psi = 12 L h^2 + 13 L h + (V + s) h + 2 h for GPT-2 with a tied LM head.
source "$(dirname "$0")/lib.sh"
# bytes from "3.21 MiB" / "512 B" / "1.50 GiB"
to_bytes() { awk '{ u = $2; v = $1; f = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 1; printf "%.0f", v * f }'; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005 * b + 8) }'; }
while read -r L h heads s V; do
  psi=$(( 12 * L * h * h + 13 * L * h + (V + s) * h + 2 * h ))
  for dp in 1 2 4; do
    for zero in 0 1; do
    for prec in fp32 bf16 fp16; do
      [ $dp = 1 ] && [ $zero = 1 ] && continue
      out=$("$WEFT" check plans/tiny.lua --set model.layers=$L --set model.hidden=$h --set model.heads=$heads \
            --set model.seq=$s --set model.vocab=$V --set mesh.dp=$dp --set batch.micro=4 \
            --set batch.global=$((4 * dp)) --set zero=$zero --set precision=$prec)
      count=$(sed -n 's/^params .*(\([0-9]*\))$/\1/p' <<<"$out")
      pbytes=$(sed -n 's/^  parameters *//p' <<<"$out" | to_bytes)
      gbytes=$(sed -n 's/^  gradients *//p' <<<"$out" | to_bytes)
      obytes=$(sed -n 's/^  optimizer *//p' <<<"$out" | to_bytes)
      div=1; [ $zero = 1 ] && div=$dp
      P=4 K=8; [ $prec = fp32 ] || { P=2; K=12; }
      what="L$L h$h s$s V$V dp $dp zero $zero $prec: Psi $psi"
      [ $prec = fp32 ] && check "$what: parameter count" test "$count" = "$psi"
      check "$what: parameters $P Psi = $((P * psi)) ~ $pbytes" near "$pbytes" $((P * psi))
      check "$what: gradients $P Psi = $((P * psi)) ~ $gbytes" near "$gbytes" $((P * psi))
      check "$what: AdamW $K Psi / $div = $((K * psi / div)) ~ $obytes" near "$obytes" $((K * psi / div))
    done
    done
  done
done <<'MODELS'
2 64 4 64 256
4 128 4 128 256
6 96 6 32 1000
MODELS
echo "$passed passed, $failed failed"
[ $failed = 0 ]
