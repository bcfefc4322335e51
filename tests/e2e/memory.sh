#!/usr/bin/env bash
# Model-state memory per rank as `weft check` reports it, against hand-computed
# values for three models and three data-parallel sizes, with and without
# ZeRO-1: parameters 4 Psi, gradients 4 Psi, AdamW moments 8 Psi (fp32; K = 8
# since the weights are their own master copy), divided by dp under ZeRO-1.
# Psi = 12 L h^2 + 13 L h + (V + s) h + 2 h for GPT-2 with a tied LM head.
source "$(dirname "$0")/lib.sh"
# bytes from "3.21 MiB" / "512 B" / "1.50 GiB"
to_bytes() { awk '{ u = $2; v = $1; f = u == "KiB" ? 1024 : u == "MiB" ? 1048576 : u == "GiB" ? 1073741824 : 1; printf "%.0f", v * f }'; }
near() { awk -v a="$1" -v b="$2" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 0.005 * b + 8) }'; }
while read -r L h heads s V; do
  psi=$(( 12 * L * h * h + 13 * L * h + (V + s) * h + 2 * h ))
  for dp in 1 2 4; do
    for zero in 0 1; do
      [ $dp = 1 ] && [ $zero = 1 ] && continue
      out=$("$WEFT" check plans/tiny.lua --set model.layers=$L --set model.hidden=$h --set model.heads=$heads \
            --set model.seq=$s --set model.vocab=$V --set mesh.dp=$dp --set batch.micro=4 \
            --set batch.global=$((4 * dp)) --set zero=$zero)
      count=$(sed -n 's/^params .*(\([0-9]*\))$/\1/p' <<<"$out")
      pbytes=$(sed -n 's/^  parameters *//p' <<<"$out" | to_bytes)
      obytes=$(sed -n 's/^  optimizer *//p' <<<"$out" | to_bytes)
      div=1; [ $zero = 1 ] && div=$dp
      what="L$L h$h s$s V$V dp $dp zero $zero: Psi $psi"
      check "$what: parameter count" test "$count" = "$psi"
      check "$what: parameters 4 Psi = $((4 * psi)) ~ $pbytes" near "$pbytes" $((4 * psi))
      check "$what: AdamW 8 Psi / $div = $((8 * psi / div)) ~ $obytes" near "$obytes" $((8 * psi / div))
    done
  done
done <<'MODELS'
2 64 4 64 256
4 128 4 128 256
6 96 6 32 1000
MODELS
echo "$passed passed, $failed failed"
[ $failed = 0 ]
