/* hf_config.h: the Hugging Face config.json of a compiled model. */
#ifndef WEFT_HF_CONFIG_H
#define WEFT_HF_CONFIG_H

#include <stddef.h>

#include "program.h"

/* Writes the JSON text (a GPT2Config, a LlamaConfig, or for a weft.vlm a
 * LlavaConfig around one) into out[0 .. n);
 * returns its length, or -1 when it does not fit. */
int hf_config_json(const Program *p, char *out, size_t n);

#endif
