"""torch_gpt.py: PyTorch's side of bench/cpu_compare.sh.  The GPT Weft's
prelude builds (pre-layernorm blocks, fused q/k/v, tanh GELU, tied LM head,
learned positions, AdamW with weight decay on the matrices, gradient clipping),
trained on random tokens in fp32 on the CPU, eager or under torch.compile.
Prints one line: "tokens/s X" over the timed steps (after the warm-up ones,
which include compilation)."""
import argparse
import math
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H):
        super().__init__()
        self.H = H
        self.ln_1, self.ln_2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.c_attn, self.attn_proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.c_fc, self.mlp_proj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).reshape(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, L, C, H, T, V):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(T, C)
        self.blocks = nn.ModuleList(Block(C, H) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        self.init_like_weft(L)

    def init_like_weft(self, L):
        """Weft's prelude initialises as GPT-2 does: normal(0, 0.02) weights,
        positions at half that, the two projections into the residual stream
        at 0.02 / sqrt(2 L), zero biases.  PyTorch's defaults (normal(0, 1)
        embeddings, tied to the head) give logits in the hundreds, a loss near
        170 and probabilities that underflow into subnormals, which slow every
        later step several times on CPUs without fast subnormal arithmetic."""
        std = 0.02
        nn.init.normal_(self.wte.weight, std=std)
        nn.init.normal_(self.wpe.weight, std=std / 2)
        for b in self.blocks:
            for lin, s in ((b.c_attn, std), (b.attn_proj, std / math.sqrt(2 * L)),
                           (b.c_fc, std), (b.mlp_proj, std / math.sqrt(2 * L))):
                nn.init.normal_(lin.weight, std=s)
                nn.init.zeros_(lin.bias)

    def forward(self, idx, targets):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # tied head
        return F.cross_entropy(logits.view(-1, logits.shape[-1]), targets.view(-1))


def main():
    ap = argparse.ArgumentParser()
    for k, d in (("layers", 4), ("hidden", 256), ("heads", 4), ("seq", 256), ("vocab", 50304),
                 ("batch", 4), ("threads", 2), ("warmup", 2), ("steps", 6)):
        ap.add_argument("--" + k, type=int, default=d)
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(a.threads)
    model = GPT(a.layers, a.hidden, a.heads, a.seq, a.vocab)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    rest = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": rest, "weight_decay": 0.0}],
                            lr=6e-4)
    fwd = torch.compile(model) if a.compile else model
    x = torch.randint(0, a.vocab, (a.batch, a.seq))
    y = torch.randint(0, a.vocab, (a.batch, a.seq))

    def step():
        opt.zero_grad(set_to_none=True)
        loss = fwd(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        return loss.item()

    for _ in range(a.warmup):
        step()
    t0 = time.perf_counter()
    for _ in range(a.steps):
        loss = step()
    dt = time.perf_counter() - t0
    assert math.isfinite(loss)
    print("tokens/s %.1f" % (a.batch * a.seq * a.steps / dt))


if __name__ == "__main__":
    main()
