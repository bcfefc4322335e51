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

int hf_config_json(const Program *p, char *out, size_t n) {
    /* Weft's data has no special tokens; HF's defaults (GPT-2: 50256, LLaMA:
     * 1 and 2) can lie outside a small vocabulary, so both name the last id. */
    int special = p->vocab - 1;
    int k;
    if (strcmp(p->family, "llama") == 0) {
        /* the projections are saved (out, in), as HF's nn.Linear keeps them */
        k = snprintf(out, n,
            "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"model_type\": \"llama\",\n"
            "  \"num_hidden_layers\": %d,\n  \"hidden_size\": %d,\n  \"num_attention_heads\": %d,\n"
            "  \"num_key_value_heads\": %d,\n  \"intermediate_size\": %d,\n"
            "  \"max_position_embeddings\": %d,\n  \"vocab_size\": %d,\n  \"hidden_act\": \"silu\",\n"
            "  \"rms_norm_eps\": %.9g,\n  \"rope_theta\": %.9g,\n  \"attention_bias\": false,\n"
            "  \"mlp_bias\": false,\n  \"attention_dropout\": 0.0,\n  \"tie_word_embeddings\": false,\n"
            "  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n  \"torch_dtype\": \"%s\"\n}\n",
            p->layers, p->hidden, p->heads, p->kv_heads, p->ffn_hidden, p->seq, p->vocab, p->norm_eps,
            p->rope_theta, special, special, hf_dtype(p));
    } else {
        /* Weft trains without dropout: HF's 0.1 defaults would add it */
        k = snprintf(out, n,
            "{\n  \"architectures\": [\"GPT2LMHeadModel\"],\n  \"model_type\": \"gpt2\",\n"
            "  \"n_layer\": %d,\n  \"n_embd\": %d,\n  \"n_head\": %d,\n  \"n_inner\": %d,\n"
            "  \"n_positions\": %d,\n  \"n_ctx\": %d,\n  \"vocab_size\": %d,\n"
            "  \"activation_function\": \"%s\",\n  \"layer_norm_epsilon\": 1e-05,\n"
            "  \"resid_pdrop\": 0.0,\n  \"embd_pdrop\": 0.0,\n  \"attn_pdrop\": 0.0,\n"
            "  \"tie_word_embeddings\": true,\n  \"bos_token_id\": %d,\n  \"eos_token_id\": %d,\n"
            "  \"torch_dtype\": \"%s\"\n}\n",
            p->layers, p->hidden, p->heads, 4 * p->hidden, p->seq, p->seq, p->vocab, hf_activation(p),
            special, special, hf_dtype(p));
    }
    return k < 0 || (size_t)k >= n ? -1 : k;
}
