#!/usr/bin/env bash
# VLM checkpoints (plans/vlm_llama.lua: a ViT, LLaVA's projector, a LLaMA):
# named and shaped as transformers' LlavaForConditionalGeneration loads them,
# with a LlavaConfig; resume gives the straight run byte for byte, and
# resharding on load (tp 2 x pp 2 -> dp 2, dp 2 -> one rank) gives it within
# reduction-order noise.  (bench/hf_llava.sh loads them in transformers.)
#
# Tolerances as tests/e2e/resume.sh's: weights per tensor within T K u of the
# updates (lib.sh's reduction_noise, K = 16 x 24 tokens a step, T = 10 steps)
# and per element within what AdamW can move them (lib.sh's adam_reach); the
# encoder's key bias, whose gradient is zero in exact arithmetic (softmax
# ignores what it adds to all of a query's scores), to adam_reach alone.
source "$(dirname "$0")/lib.sh"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
GLOBAL=16 SEQ=24
"$WEFT" data vlm-synth -o "$WORK/vlm.bin" --image 32 --patch 8 --seq $SEQ --count 256 --seed 5 >/dev/null
# init_std 0.02, as e2e_vlm_equivalence runs (its bounds assume rounding
# differences that training does not amplify)
common=(--set data.train="$WORK/vlm.bin" --set train.steps=10 --set batch.global=$GLOBAL
        --set model.vision.init_std=0.02 --set model.llm.init_std=0.02)
build_plan ref plans/vlm_llama.lua "${common[@]}" --set batch.micro=16
run_plan ref --steps 10 --save "$WORK/straight" --metrics "$WORK/straight.jsonl" >/dev/null
run_plan ref --steps 0 --save "$WORK/init" >/dev/null
run_plan ref --steps 5 --save "$WORK/half" --metrics "$WORK/resumed.jsonl" >/dev/null
run_plan ref --steps 10 --resume "$WORK/half" --save "$WORK/resumed" --metrics "$WORK/resumed.jsonl" >/dev/null
check "resume: model weights byte-identical" \
  "$WEFT" ckpt diff "$WORK/straight/model.safetensors" "$WORK/resumed/model.safetensors"
check "resume: optimizer state byte-identical" \
  "$WEFT" ckpt diff "$WORK/straight/optimizer.safetensors" "$WORK/resumed/optimizer.safetensors"
check "resume: same losses at all 10 steps" cmp -s \
  <(sed 's/, "ms".*//' "$WORK/straight.jsonl") <(sed 's/, "ms".*//' "$WORK/resumed.jsonl")

# The checkpoint is LLaVA's: config.json a LlavaConfig (features: the last
# encoder layer's output, every patch), tensors under LLaVA's names with
# nn.Linear's (out, in) shapes (the manifest lists each file's tensors).
cfg="$WORK/straight/config.json" man="$WORK/straight/manifest.json"
for field in '"architectures": ["LlavaForConditionalGeneration"]' '"model_type": "llava"' \
             '"image_token_index": 14' '"image_seq_length": 16' '"vision_feature_layer": -1' \
             '"vision_feature_select_strategy": "full"' '"projector_hidden_act": "gelu"' \
             '"model_type": "siglip_vision_model"' '"hidden_act": "gelu_pytorch_tanh"' '"vision_use_head": false' \
             '"patch_size": 8' '"image_size": 32' '"model_type": "llama"' '"num_key_value_heads": 2'; do
  check "config.json: $field" grep -qF "$field" "$cfg"
done
V=model.vision_tower.vision_model
flat=$(tr -d ' \t\n' <"$man")  # cJSON's layout aside: "NAME":{"shape":[...]
for t in "$V.embeddings.patch_embedding.weight 32,3,8,8" "$V.embeddings.patch_embedding.bias 32" \
         "$V.embeddings.position_embedding.weight 16,32" "$V.encoder.layers.1.self_attn.q_proj.weight 32,32" \
         "$V.encoder.layers.1.self_attn.v_proj.bias 32" "$V.encoder.layers.0.mlp.fc1.weight 64,32" \
         "$V.post_layernorm.weight 32" "model.multi_modal_projector.linear_2.weight 32,32" \
         "model.language_model.layers.1.self_attn.k_proj.weight 16,32" \
         "model.language_model.embed_tokens.weight 16,32" "lm_head.weight 16,32"; do
  check "tensor ${t% *} [${t#* }]" grep -qF "\"${t% *}\":{\"shape\":[${t#* }]" <<<"$flat"
done
check "no fused qkv_proj tensor is saved" bash -c '! grep -q qkv_proj "$1"' _ "$man"

# Resharding on load: 5 steps under tp 2 x pp 2 (the encoder's fused q|k|v
# split by heads, then saved as q, k and v), 5 more on dp 2; and 5 steps on
# dp 2, 5 more on one rank.
same_weights() {
  weights_match "$WORK/straight/model.safetensors" "$1" "$WORK/init/model.safetensors" \
    "$WORK/ref/stage0.c" "$WORK/straight.jsonl" $((GLOBAL * SEQ)) --noise '*.self_attn.k_proj.bias:0:1073741824'
}
build_plan tp2pp2 plans/vlm_llama.lua "${common[@]}" --set mesh.tp=2 --set mesh.pp=2 --set batch.micro=4 \
  --set cluster.devices_per_node=4
build_plan dp2 plans/vlm_llama.lua "${common[@]}" --set mesh.dp=2 --set batch.micro=8 --set cluster.devices_per_node=2
run_plan tp2pp2 --steps 5 --save "$WORK/half3d" >/dev/null
# --async-save streams the same files from each rank's own copy, including
# a constant that copies a parameter (vlm_tiny's GPT-2 saves lm_head.weight,
# a copy of wte, for LLaVA), obtained from that copy like the parameter
build_plan tiny_dp2 plans/vlm_tiny.lua --set data.train="$WORK/vlm.bin" --set mesh.dp=2 \
  --set cluster.devices_per_node=2 --set batch.micro=8 --set batch.global=16
run_plan tiny_dp2 --steps 2 --save "$WORK/tiny_sync" >/dev/null
run_plan tiny_dp2 --steps 2 --save "$WORK/tiny_async" --async-save >/dev/null
check "vlm_tiny dp 2: --async-save writes the synchronous save's files (lm_head.weight, a copy of wte, too)" \
  bash -c 'cmp "$1/model.safetensors" "$2/model.safetensors" && cmp "$1/optimizer.safetensors" "$2/optimizer.safetensors"' \
  _ "$WORK/tiny_async" "$WORK/tiny_sync"
run_plan dp2 --steps 10 --resume "$WORK/half3d" --save "$WORK/resharded" >/dev/null
check "checkpoint from tp 2 x pp 2 resumes on dp 2 (resharded)" same_weights "$WORK/resharded/model.safetensors"
run_plan dp2 --steps 5 --save "$WORK/half_dp2" >/dev/null
run_plan ref --steps 10 --resume "$WORK/half_dp2" --save "$WORK/dp2_to_1" >/dev/null
check "checkpoint from dp 2 resumes on one rank" same_weights "$WORK/dp2_to_1/model.safetensors"
# pp 2 saves a Hugging Face sharded checkpoint (a shard a stage, an index):
# every name in exactly one shard, lm_head.weight (vlm_tiny's copy of wte) in
# stage 0's beside wte, every tensor the dp 2 run's bit for bit
check "tp 2 x pp 2 checkpoint: indexes list every tensor once, total_size the shards' bytes" \
  python3 "$(dirname "$0")/check_index.py" "$WORK/half3d"
build_plan tiny_pp2 plans/vlm_tiny.lua --set data.train="$WORK/vlm.bin" --set mesh.pp=2 \
  --set cluster.devices_per_node=2 --set batch.micro=8 --set batch.global=16
run_plan tiny_pp2 --steps 0 --save "$WORK/tiny_pp2_init" >/dev/null
run_plan tiny_dp2 --steps 0 --save "$WORK/tiny_dp2_init" >/dev/null
check "vlm_tiny pp 2: lm_head.weight (a copy of wte) in the shard of wte, listed once" \
  bash -c 'python3 "$1" "$2" >/dev/null && grep -qE "\"lm_head.weight\":[[:space:]]*\"model-00001-of-00002.safetensors\"" "$2/model.safetensors.index.json" &&
           grep -qE "\"model.language_model.wte.weight\":[[:space:]]*\"model-00001-of-00002.safetensors\"" "$2/model.safetensors.index.json"' \
  _ "$(dirname "$0")/check_index.py" "$WORK/tiny_pp2_init"
check "vlm_tiny pp 2 checkpoint holds the dp 2 run's tensors bit for bit" \
  bash -c '"$1" ckpt diff "$2/model.safetensors" "$3/model.safetensors" >/dev/null &&
           "$1" ckpt diff "$2/optimizer.safetensors" "$3/optimizer.safetensors" >/dev/null' \
  _ "$WEFT" "$WORK/tiny_pp2_init" "$WORK/tiny_dp2_init"
shapes() { tr -d ' \t\n' <"$1" | grep -o '"[a-z_.0-9]*":{"shape":\[[0-9,]*\]' | sort; }
check "tp 2 x pp 2 checkpoint holds the same tensors as one rank's" \
  cmp <(shapes "$WORK/half3d/manifest.json") <(shapes "$WORK/half/manifest.json")

echo "$passed passed, $failed failed"
[ $failed = 0 ]
