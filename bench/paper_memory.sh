#!/usr/bin/env bash
# Planned activation memory of the Megatron-LM paper configurations
# (plans/paper/*.lua) against Korthikanti et al.'s formulas.  For every plan
# and both recompute modes it runs `weft check --backend cuda` and prints one
# row: whether the plan fits the device, the worst pipeline stage's planned
# total, activations and activation gradients per rank, the formula's
# activation memory for that mode, and the ratios planned / formula.
# Run from the repository root after scripts/build.sh (WEFT= another weft).
#
# Modes.  "full": the plan as written (full recompute, no sequence
# parallelism: Narayanan et al. SC21 and Korthikanti's baseline).
# "selective": --set recompute=selective --set mesh.sp=true (Korthikanti's
# selective recompute with sequence parallelism).
#
# The formulas: V. Korthikanti, J. Casper, S. Lym, L. McAfee, M. Andersch,
# M. Shoeybi, B. Catanzaro, "Reducing Activation Recomputation in Large
# Transformer Models", 2022 (arXiv:2205.05198), section 4 (activation memory)
# and 5 (selective recompute).  Activations stored for backward per
# transformer layer, bytes, 16-bit values, with s the sequence length, b the
# microbatch, h the hidden size, a the heads, t the tensor-parallel size:
#   no recompute, tensor parallel, no SP      sbh (10 + 24/t + 5as/(ht))
#   no recompute, tensor + sequence parallel  sbh/t (34 + 5as/h)
#   selective recompute + SP                  sbh (34/t)
#   full recompute                            2sbh (the layer's input; 2sbh/t with SP)
# The 5as/h term is the (s x s) attention matrix's softmax output (2 bytes),
# dropout mask (1) and dropout output (2) per head; flash-style kernels
# (runtime/cuda/attention.cu) keep a 4-byte log-sum-exp per row and head
# instead, 4a/(ht) per sbh.  The 34 counts the attention and MLP output
# dropouts' 1-byte masks (sbh each), which a plan without dropout does not
# have.
# Full recompute also needs one layer's working set while that layer's
# backward runs: the no-recompute term of the same parallelism (the first or
# second line), added once.
# Pipeline (section 4, pipeline parallelism): under 1F1B the first stage holds
# p microbatches (fewer if the step has fewer) of its L/p layers, so L
# layers' worth, and stage s holds p - s of them (its warm-up forwards plus
# the one in flight).  The interleaved schedule with v chunks per rank holds,
# on stage s, the pv + p - 1 - 2s chunk-microbatches of Megatron-LM's
# interleaved warm-up plus one (at most the step's m v), each L/(pv) layers:
# for s = 0 that is L (1 + (p-1)/(pv)), the paper's factor.  The embedding's
# and the LM head's few sbh on the first and last stage are left out.
# So the formula column, for stage s, is
#   1F1B         per_layer * (L/p) * min(p - s, m) + working set
#   interleaved  per_layer * (L/(pv)) * min(pv + p - 1 - 2s, mv) + working set
# and every stage is compared with its own formula.  The work column is the
# formula's working set; the head column (the last stage only) what Weft's
# last stage holds that the formula leaves out: the LM head's 2sbh input
# (full recompute: in each slot; under interleaving every slot of the stage
# is sized by its largest chunk, the loss chunk; selective recompute + SP:
# once, gathered again before the head's backward as Megatron-LM's output
# layer does, like the blocks' norm outputs, in the region) and the CUDA
# head's dlogits, 2sbv/t in 16 bits, once.  Each row shows the stage
# whose activations are the largest share of its formula (the a/f column's
# worst), stage 0's ratio, and the largest total over the stages; STAGES=1
# prints a row per stage instead (tests/e2e/paper_plans.sh checks every one).
# Where Weft's plan differs from the formula (compiler/memory_slot.c packs
# a slot and the stage's region by live interval):
#   selective + SP: a slot keeps per layer the two norms' inputs and
#     (sequence-parallel) outputs, q|k|v, the attention output, the MLP's
#     4h pre-activation and GELU output: 4 + 4 + 6 + 2 + 8 + 8 = 32 sbh/t
#     bytes, plus the fp32 norm statistics (16 bytes a token / t) and the
#     4-byte log-sum-exp per row and head; no dropout masks (the plans have
#     no dropout: Korthikanti's 34 counts two 1-byte masks), so about 6%
#     under the formula.  The all-gathered norm output is gathered again
#     before its linear's backward (as Megatron-LM does), in the region.
#   full recompute: a slot keeps each block's input (2sbh); the chunk's
#     output waits for its send in a staging buffer (scratch), not the slot;
#     the region (once per stage) holds one block's internals and the
#     forward's transients, so the working set is counted once.  Each
#     internal tensor lives there from its writer to its last reader in the
#     block's recompute or backward, and the in-place ops (the tp copy and
#     all-reduce, the bias and residual adds: compiler/memory_inplace.c)
#     write over their dying inputs, so the working set is what one tick of
#     the block needs: the tp copies of the two norms' outputs, the
#     residual between them, the partial sums one at a time (about 8 sbh of
#     full-width tensors with 24/t sbh of sharded ones, against the formula's
#     10 + 24/t + 5as/(ht)): every stage is at or under its formula.
#   selective + SP: the region holds the forward's transients, the
#     row-parallel linear's unreduced (N, h) partial before its
#     reduce-scatter and the all-gathered norm output, one at a time (2sbh,
#     as Megatron-LM allocates them; the formula has no working set), so a
#     stage with few layers (a deep pipeline's last) is over by that and the
#     LM head (below).
#   Both: the first stage's embedding and the last stage's LM head add a few
#     sbh, and 64-byte alignment per tensor.
# The note column: "formula does not fit" where even the formula's
# activations plus some stage's other memory exceed the device (the selective
# variants of the 1.7B and 3.6B plans: tp 1 and 2 keep 34/t sbh a layer,
# which Narayanan et al. did not run; they used full recompute).
set -uo pipefail
WEFT=${WEFT:-build/compiler/weft}
PLANS=${PLANS:-plans/paper}

STAGES=${STAGES:-0}
printf '%-22s %-9s %-6s %5s %9s %9s %9s %9s %7s %7s %7s %7s %7s %s\n' plan mode fits stage total acts \
  'act.grad' formula 'a/f' '(a+g)/f' 'a/f@0' work head note
printf '%-22s %-9s %-6s %5s %9s %9s %9s %9s %7s %7s %7s %7s %7s\n' '' '' '' '' GiB GiB GiB GiB '' '' '' GiB GiB
for plan in "$PLANS"/*.lua; do
  name=$(basename "$plan" .lua)
  for mode in full selective; do
    extra=()
    [ "$mode" = selective ] && extra=(--set recompute=selective --set mesh.sp=true)
    out=$("$WEFT" check --backend cuda "$plan" "${extra[@]}" 2>&1)
    rc=$?
    if ! grep -q "verdict" <<<"$out"; then
      printf '%-22s %-9s refused (exit %d): %s\n' "$name" "$mode" "$rc" "$(grep -m1 error <<<"$out")"
      continue
    fi
    # One awk over check's report: the shape and layout, the memory table
    # (a column per stage, each a number and a unit), the verdict; then each
    # stage's formula.
    awk -v mode="$mode" -v name="$name" -v stages="$STAGES" '
      function b(n, u) { return n * (u == "TiB" ? 2^40 : u == "GiB" ? 2^30 : u == "MiB" ? 2^20 : u == "KiB" ? 2^10 : 1) }
      function row(arr, first,   i, k) { k = 0; for (i = first; i < NF; i += 2) arr[k++] = b($i, $(i + 1)); return k }
      function line(k, g) {
        printf "%-22s %-9s %-6s %5d %9.2f %9.2f %9.2f %9.2f %7.2f %7.2f %7.2f %7.3f %7.3f %s\n", name, mode, fits, k,
               (stages ? T[k] : most) / g, A[k] / g, G[k] / g, F[k] / g, A[k] / F[k], (A[k] + G[k]) / F[k],
               A[0] / F[0], work / g, (k == n - 1 ? H : 0) / g, note
      }
      /^model / { for (i = 1; i < NF; i++) { if ($(i + 1) ~ /^layers/) L = $i + 0; if ($i == "hidden") h = $(i + 1) + 0
                                             if ($(i + 1) ~ /^heads/) a = $i + 0; if ($i == "seq") s = $(i + 1) + 0
                                             if ($i == "vocab") V = $(i + 1) + 0 } }
      /^batch / { mb = $6 + 0; m = $12 + 0 }  # global G = micro b x dp D x accumulation m;
      /^mesh / { for (i = 1; i < NF; i++) { if ($i == "tp") t = $(i + 1) + 0; if ($i == "pp") p = $(i + 1) + 0 } }
      /^pipeline / { for (i = 1; i < NF; i++) if ($i == "x") v = $(i + 1) + 0 }
      $1 == "activations" && $3 ~ /^(B|KiB|MiB|GiB|TiB)$/ { n = row(A, 2) }  # not the precision line
      $1 == "act." && $2 == "grads" { row(G, 3) }
      $1 == "total" { row(T, 2) }
      $1 == "verdict" { fits = $2 == "fits" ? "yes" : "NO"; for (i = 2; i < NF; i++) if ($(i + 1) == "GiB") dev = $i * 2^30 }
      END {
        if (!v) v = 1
        if (!p) p = 1
        sbh = s * mb * h
        if (mode == "selective") { per = sbh * 34 / t; work = 0 }
        else { per = 2 * sbh; work = sbh * (10 + 24 / t + 5 * a * s / (h * t)) }
        g = 2^30
        note = ""
        w = 0; most = 0
        for (k = 0; k < n; k++) {
          if (v > 1) { units = p * v + p - 1 - 2 * k; if (units > m * v) units = m * v; F[k] = per * L / (p * v) * units + work }
          else { units = p - k; if (units > m) units = m; F[k] = per * L / p * units + work }
          if (k == n - 1) H = 2 * s * mb * h * (v > 1 && mode == "full" ? units : 1) + 2 * s * mb * V / t  # the LM head (above)
          if (A[k] / F[k] > A[w] / F[w]) w = k
          if (T[k] > most) most = T[k]
          if (T[k] - A[k] + F[k] > dev) note = "formula does not fit"
        }
        if (stages) for (k = 0; k < n; k++) line(k, g)
        else line(w, g)
      }' <<<"$out"
  done
done
