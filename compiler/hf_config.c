/* hf_config.c: config.json, the file that lets transformers load (and go on
 * training) a Weft checkpoint: a GPT2Config or a LlamaConfig with every field
 * that would otherwise take a default unlike what Weft trained.
 *
 * The compiler writes it into the generated folder and embeds the same text
 * in each stage program, which copies it into every checkpoint. */
#include <stdio.h>
#include <string.h>

#include "hf_config.h"
#include "ops.h"

/* HF's name for the model's MLP activation: its op's row says it (ops.c).
 * gelu is the tanh approximation (GPT-2's), HF's "gelu_new"; gelu_erf
 * the exact form, HF's "gelu". */
static const char *hf_activation(const Program *p) {
    for (int i = 0; i < p->n_ops; i++) {
        const op_row *r = op_row_of(p->ops[i].kind);
        if (r && r->hf_activation) return r->hf_activation;  /* the op table's name for it */
    }
    return "gelu_new";
}

/* The dtype HF loads the weights as: the plan's training precision. */
static const char *hf_dtype(const Program *p) {
    if (strcmp(p->precision, "bf16") == 0) return "bfloat16";
    if (strcmp(p->precision, "fp16") == 0) return "float16";
    return "float32";
}

/* The language model's fields (a LlamaConfig's or a GPT2Config's), each line
 * led by ind; returns the length written or -1.  GPT-2's head is tied to wte,
 * except under LLaVA (llava_config). */
static int text_fields(const Program *p, char *out, size_t n, const char *ind) {
    const char *gpt2_tied = p->image_positions > 0 ? "false" : "true";
    /* Weft's data has no special tokens; HF's defaults (GPT-2: 50256, LLaMA:
     * 1 and 2) can lie outside a small vocabulary, so both name the last id. */
    int special = p->vocab - 1;
    int k;
    if (strcmp(p->family, "llama") == 0)
        /* the projections are saved (out, in), as HF's nn.Linear keeps them */
        k = snprintf(out, n,
            "%s\"model_type\": \"llama\",\n%s\"num_hidden_layers\": %d,\n%s\"hidden_size\": %d,\n"
            "%s\"num_attention_heads\": %d,\n%s\"num_key_value_heads\": %d,\n%s\"intermediate_size\": %d,\n"
            "%s\"max_position_embeddings\": %d,\n%s\"vocab_size\": %d,\n%s\"hidden_act\": \"silu\",\n"
            "%s\"rms_norm_eps\": %.9g,\n%s\"rope_theta\": %.9g,\n%s\"attention_bias\": false,\n"
            "%s\"mlp_bias\": false,\n%s\"attention_dropout\": 0.0,\n%s\"tie_word_embeddings\": false,\n"
            "%s\"bos_token_id\": %d,\n%s\"eos_token_id\": %d,\n%s\"torch_dtype\": \"%s\"\n",
            ind, ind, p->layers, ind, p->hidden, ind, p->heads, ind, p->kv_heads, ind, p->ffn_hidden, ind, p->seq,
            ind, p->vocab, ind, ind, p->norm_eps, ind, p->rope_theta, ind, ind, ind, ind, ind, special, ind,
            special, ind, hf_dtype(p));
    else
        /* Weft trains without dropout: HF's 0.1 defaults would add it */
        k = snprintf(out, n,
            "%s\"model_type\": \"gpt2\",\n%s\"n_layer\": %d,\n%s\"n_embd\": %d,\n%s\"n_head\": %d,\n"
            "%s\"n_inner\": %d,\n%s\"n_positions\": %d,\n%s\"n_ctx\": %d,\n%s\"vocab_size\": %d,\n"
            "%s\"activation_function\": \"%s\",\n%s\"layer_norm_epsilon\": 1e-05,\n"
            "%s\"resid_pdrop\": 0.0,\n%s\"embd_pdrop\": 0.0,\n%s\"attn_pdrop\": 0.0,\n"
            "%s\"tie_word_embeddings\": %s,\n%s\"bos_token_id\": %d,\n%s\"eos_token_id\": %d,\n"
            "%s\"torch_dtype\": \"%s\"\n",
            ind, ind, p->layers, ind, p->hidden, ind, p->heads, ind, 4 * p->hidden, ind, p->seq, ind, p->seq, ind,
            p->vocab, ind, hf_activation(p), ind, ind, ind, ind, ind, gpt2_tied, ind, special, ind, special, ind,
            hf_dtype(p));
    return k < 0 || (size_t)k >= n ? -1 : k;
}

/* A weft.vlm: a LlavaConfig around the language model's config and a
 * SiglipVisionConfig.  Weft's encoder (prelude.lua, make_vlm) is SigLIP's
 * without the attention-pooling head (vision_use_head false), its MLP the
 * tanh GELU ("gelu_pytorch_tanh"), its layer norms eps 1e-5 (layernorm.c);
 * the projector's GELU is the exact one ("gelu").  LLaVA feeds the projector
 * hidden_states[vision_feature_layer], every patch ("full": SigLIP has no
 * class token); -1 is the last layer's output, before SigLIP's
 * post_layernorm, which is what Weft computes.  image_seq_length: the
 * placeholders of one image, each replaced by one projected patch.  The LM
 * head is untied: transformers ties LLaVA's to an embed_tokens that a GPT-2
 * lacks, so a GPT-2's tied head is saved as lm_head.weight too (make_gpt2). */
static int llava_config(const Program *p, char *out, size_t n) {
    char text[2048];
    if (text_fields(p, text, sizeof text, "    ") < 0) return -1;
    int k = snprintf(out, n,
        "{\n  \"architectures\": [\"LlavaForConditionalGeneration\"],\n  \"model_type\": \"llava\",\n"
        "  \"image_token_index\": %d,\n  \"image_seq_length\": %d,\n  \"projector_hidden_act\": \"gelu\",\n"
        "  \"multimodal_projector_bias\": true,\n  \"vision_feature_layer\": -1,\n"
        "  \"vision_feature_select_strategy\": \"full\",\n  \"tie_word_embeddings\": false,\n"
        "  \"torch_dtype\": \"%s\",\n"
        "  \"vision_config\": {\n    \"model_type\": \"siglip_vision_model\",\n    \"image_size\": %d,\n"
        "    \"patch_size\": %d,\n    \"num_channels\": %d,\n    \"hidden_size\": %d,\n"
        "    \"intermediate_size\": %d,\n    \"num_hidden_layers\": %d,\n    \"num_attention_heads\": %d,\n"
        "    \"hidden_act\": \"gelu_pytorch_tanh\",\n    \"layer_norm_eps\": 1e-05,\n"
        "    \"attention_dropout\": 0.0,\n    \"vision_use_head\": false\n  },\n"
        "  \"text_config\": {\n%s  }\n}\n",
        p->image_token, p->image_positions, hf_dtype(p), p->image_h, p->patch,
        p->image_c, p->vit_hidden, p->vit_mlp, p->vit_layers, p->vit_heads, text);
    return k < 0 || (size_t)k >= n ? -1 : k;
}

int hf_config_json(const Program *p, char *out, size_t n) {
    if (p->image_positions > 0) return llava_config(p, out, n);
    int llama = strcmp(p->family, "llama") == 0;
    int k = snprintf(out, n, "{\n  \"architectures\": [\"%s\"],\n", llama ? "LlamaForCausalLM" : "GPT2LMHeadModel");
    if (k < 0 || (size_t)k >= n) return -1;
    int t = text_fields(p, out + k, n - (size_t)k, "  ");
    if (t < 0 || (size_t)(k + t + 2) >= n) return -1;
    memcpy(out + k + t, "}\n", 3);
    return k + t + 2;
}
