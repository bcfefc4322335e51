"""hf_llava.py: transformers' side of bench/hf_llava.sh.  Loads a Weft
checkpoint folder of a weft.vlm plan (a SigLIP-style tower, LLaVA's
projector, a LLaMA or GPT-2 language model) with
LlavaForConditionalGeneration.from_pretrained, refuses any missing,
unexpected or mismatched weight, runs every record of a WVLM file
(runtime/common/data_vlm.h) through it in float64 and prints the mean
cross-entropy over the loss positions (mask != 0), and over the descriptive
ones (mask == 2), as Weft's metrics define them (runtime/common/batch_vlm.c).

usage: hf_llava.py CHECKPOINT_DIR DATA.bin"""
import struct
import sys

import numpy as np
import torch
import transformers
from transformers import LlavaForConditionalGeneration


def read_wvlm(path):
    raw = open(path, "rb").read()
    h = struct.unpack("<256i", raw[:1024])
    assert h[0] == 0x4D4C5657 and h[1] == 1, "not a WVLM file"
    H, W, C, S, N, P = h[2], h[3], h[4], h[5], h[6], h[9]
    rec = H * W * C + 3 * (S + 1)
    assert h[14] == rec and len(raw) == 1024 + N * rec
    images, tokens, masks = [], [], []
    for i in range(N):
        r = raw[1024 + i * rec:1024 + (i + 1) * rec]
        images.append(np.frombuffer(r[:H * W * C], np.uint8).reshape(H, W, C))
        tokens.append(np.frombuffer(r[H * W * C:H * W * C + 2 * (S + 1)], "<u2").astype(np.int64))
        masks.append(np.frombuffer(r[H * W * C + 2 * (S + 1):], np.uint8))
    return np.stack(images), np.stack(tokens), np.stack(masks), P


def main():
    ckpt, data = sys.argv[1], sys.argv[2]
    model, info = LlavaForConditionalGeneration.from_pretrained(ckpt, torch_dtype=torch.float32,
                                                              output_loading_info=True)
    bad = {k: v for k, v in info.items() if v}
    if bad:
        sys.exit(f"hf_llava.py: loading {ckpt}: {bad}")
    model = model.double().eval()
    images, tokens, masks, P = read_wvlm(data)
    # SigLIP's image processor at the model's resolution: (v / 255 - 0.5) / 0.5,
    # channels first, as Weft's patch embedding normalises (vision.c)
    pixels = (torch.from_numpy(images.copy()).double() / 255.0 - 0.5) / 0.5
    pixels = pixels.permute(0, 3, 1, 2).contiguous()
    ids = torch.from_numpy(tokens[:, :-1].copy())
    targets = torch.from_numpy(tokens[:, 1:].copy())
    mask = torch.from_numpy(masks[:, 1:].copy())
    with torch.no_grad():
        logits = model(input_ids=ids, pixel_values=pixels).logits
    nll = -torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    loss = nll[mask != 0].sum() / (mask != 0).sum()
    desc = nll[mask == 2].sum() / max(int((mask == 2).sum()), 1)
    print(f"transformers {transformers.__version__} torch {torch.__version__}")
    print(f"records {len(tokens)} image_tokens {P} loss_positions {int((mask != 0).sum())}")
    print(f"loss {loss.item():.17g}")
    print(f"loss_descriptive {desc.item():.17g}")


if __name__ == "__main__":
    main()
