#!/usr/bin/env bash
# plans/llama_70b.lua (LLaMA-2-70B shapes on 8 x 8 H100, tp 8, dp 8): `weft
# check` counts 68,976,648,192 parameters (Hugging Face's count for
# Llama-2-70b-hf) and 6 (N - embedding) + 12 L h s = 444,499,279,872 FLOPs
# per token at seq 4096; it reports that fp32 does not fit; `weft check` and
# `weft simulate` materialise nothing: each runs within 1 GiB of address space
# while the model's fp32 weights alone are 257 GiB;
# tp 16 is refused (it does not divide the 8 key/value heads); a DeepSpeed
# config imported with this model checks.
source "$(dirname "$0")/lib.sh"
PLAN=plans/llama_70b.lua
# limited OUT CMD...: CMD under a 1 GiB address-space limit, its output in OUT
# (none under AddressSanitizer, bench/sanitize.sh: its shadow memory is a
# reservation of terabytes)
limit=${LIMIT_KIB:-1048576}
if ldd "$WEFT" 2>/dev/null | grep -q libasan; then limit=unlimited; fi
limited() { local out=$1; shift; (ulimit -v "$limit"; "$@") >"$out" 2>&1; }
check "weft check runs within 1 GiB of address space" limited "$WORK/check.txt" "$WEFT" check "$PLAN"
check "weft simulate runs within 1 GiB of address space" limited "$WORK/simulate.txt" "$WEFT" simulate "$PLAN"
check "parameters: 68976648192" grep -q "^params .*(68976648192)" "$WORK/check.txt"
check "FLOPs per token: 444499279872" grep -q "6(N - embedding) + 12\*L\*h\*s = 444499279872)" "$WORK/check.txt"
check "grouped-query attention reported" grep -q "8 key/value heads (grouped-query attention), SwiGLU 28672" "$WORK/check.txt"
check "fp32 70B on tp 8 does not fit an H100" grep -q "verdict      DOES NOT FIT in the 80.00 GiB" "$WORK/check.txt"
# parameters per rank: everything but the 161 RMSNorm weights (kept whole) split 8 ways,
# 4 bytes each: 4 * ((68976648192 - 161 * 8192) / 8 + 161 * 8192) bytes = 32.12 GiB
check "per-rank parameters 32.12 GiB" grep -q "^  parameters      32.12 GiB" "$WORK/check.txt"
check "simulate: MFU from 6(N - embedding) + 12Lhs" grep -q "MFU .*(model FLOPs 6(N - embedding) + 12Lhs)" "$WORK/simulate.txt"
check "simulate: memory verdict" grep -q "^  stage 0 .*does not fit" "$WORK/simulate.txt"
# tp must divide the 8 key/value heads: tp 16 would split 64 query heads but not them
check "tp 16 refused: kv_heads" bash -c '"$1" check "$2" --set mesh.tp=16 --set mesh.dp=4 \
  --set cluster.devices_per_node=16 --set cluster.nodes=4 2>&1 | grep -q "mesh.tp: 16 does not divide kv_heads = 8"' \
  _ "$WEFT" "$PLAN"
# A DeepSpeed config (ZeRO-1, fp32) imported with the LLaMA model on 64 GPUs:
# the plan keeps weft.llama and the model plan's tp 8 (so dp = 64 / 8 = 8, and
# 512 = 1 x 64 x 8), and checks.
cat >"$WORK/ds.json" <<'JSON'
{ "train_batch_size": 512, "train_micro_batch_size_per_gpu": 1, "gradient_accumulation_steps": 64,
  "zero_optimization": { "stage": 1 }, "gradient_clipping": 1.0,
  "optimizer": { "type": "AdamW", "params": { "lr": 1.5e-4, "betas": [0.9, 0.95], "weight_decay": 0.1 } } }
JSON
"$WEFT" import-deepspeed "$WORK/ds.json" --model "$PLAN" --world 64 -o "$WORK/ds.lua" 2>/dev/null
check "DeepSpeed import keeps weft.llama" grep -q "w.llama { layers = 80" "$WORK/ds.lua"
check "DeepSpeed import keeps tp 8 and sp, dp = 8" grep -q "mesh = { dp = 8, tp = 8, pp = 1, sp = true }" "$WORK/ds.lua"
check "imported plan checks: 68976648192 parameters on dp 8 x tp 8" \
  bash -c '"$1" check "$2" | grep -q "^params .*(68976648192)"' _ "$WEFT" "$WORK/ds.lua"
echo "$passed passed, $failed failed"
[ $failed = 0 ]
