"""hf_gpt2.py: transformers' side of bench/hf_gpt2.sh.  Loads a Weft
checkpoint folder of a GPT-2 plan (one model.safetensors, or with pp > 1 the
sharded set model-0000S-of-0000N.safetensors + model.safetensors.index.json)
with GPT2LMHeadModel.from_pretrained, refuses any missing, unexpected or
mismatched weight, runs the global batch of one step through it in float64
and prints the mean cross-entropy over every position, as Weft's loss is.

The batch is Weft's own (runtime/common/data.c, wf_data_window): sample g of
seed s starts at token hash(s, g) mod (n - seq) of the .bin file, splitmix64's
finalizer mixing the seed, then the index; step k (0-based) reads samples
k * global .. k * global + global - 1.

usage: hf_gpt2.py CHECKPOINT_DIR DATA.bin SEED STEP GLOBAL"""
import sys

import numpy as np
import torch
import transformers
from transformers import GPT2LMHeadModel

M64 = (1 << 64) - 1


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def window(seed, g, n, seq):
    h = mix64((seed + 0x9E3779B97F4A7C15) & M64)
    h = mix64(h ^ ((g * 0x9E3779B97F4A7C15 + 0xD1B54A32D192ED03) & M64))
    return h % (n - seq)


def main():
    ckpt, data, seed, step, glob = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
    model, info = GPT2LMHeadModel.from_pretrained(ckpt, torch_dtype=torch.float32, output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        sys.exit(f"hf_gpt2.py: loading {ckpt}: {bad}")
    model = model.double().eval()
    seq = model.config.n_positions
    raw = np.fromfile(data, dtype="<i4", count=256)
    assert raw[0] == 20240520, "not a llm.c token file"
    tokens = np.fromfile(data, dtype="<u2", offset=1024).astype(np.int64)
    n = len(tokens)
    rows = [tokens[s:s + seq + 1] for s in (window(seed, step * glob + i, n, seq) for i in range(glob))]
    batch = torch.from_numpy(np.stack(rows))
    with torch.no_grad():
        logits = model(input_ids=batch[:, :-1]).logits
    nll = -torch.log_softmax(logits, dim=-1).gather(-1, batch[:, 1:].unsqueeze(-1)).squeeze(-1)
    print(f"transformers {transformers.__version__} torch {torch.__version__}")
    print(f"loaded {sum(p.numel() for p in model.parameters())} parameters, none missing or unexpected")
    print(f"loss {nll.mean().item():.17g}")


if __name__ == "__main__":
    main()
