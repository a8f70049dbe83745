# A plain PyTorch training loop with no memscope code: a small GPT (token and
# position embeddings, a ModuleList `blocks` of pre-LayerNorm transformer
# blocks with causal self-attention written out with matmul and softmax and a
# GELU MLP, a final LayerNorm, a head), cross-entropy, AdamW; zero_grad at the
# start of each step. Fixed seeds, no dropout: every run computes the same.
#
# usage: train_gpt_ckpt.py [--checkpoint none|all|every-other] [--steps N]
#   --checkpoint  which blocks torch.utils.checkpoint.checkpoint wraps: none
#                 (the default, everything saved), all, or every-other (blocks
#                 0, 2, 4, ...). PyTorch 1.13's default, use_reentrant=True, is
#                 used: the checkpointed block runs under no_grad in forward
#                 and is called again (the module re-entered) in backward.
#   --steps       training steps (default 3)
import argparse

import torch
from torch.utils.checkpoint import checkpoint

N_BLOCKS, D, HEADS, T, B, VOCAB = 6, 128, 4, 128, 8, 512


class CausalSelfAttention(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.register_buffer("mask", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q = q.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        k = k.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        v = v.view(b, t, self.heads, d // self.heads).transpose(1, 2)
        att = torch.matmul(q, k.transpose(-2, -1)) / (d // self.heads) ** 0.5
        att = att.masked_fill(~self.mask[:t, :t], float("-inf"))
        att = torch.softmax(att, dim=-1)
        y = torch.matmul(att, v).transpose(1, 2).contiguous().view(b, t, d)
        return self.proj(y)


class Block(torch.nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = torch.nn.LayerNorm(d)
        self.attn = CausalSelfAttention(d, heads)
        self.ln2 = torch.nn.LayerNorm(d)
        self.mlp = torch.nn.Sequential(torch.nn.Linear(d, 4 * d), torch.nn.GELU(),
                                       torch.nn.Linear(4 * d, d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class GPT(torch.nn.Module):
    def __init__(self, checkpointed):
        super().__init__()
        self.checkpointed = checkpointed
        self.tok_emb = torch.nn.Embedding(VOCAB, D)
        self.pos_emb = torch.nn.Embedding(T, D)
        self.blocks = torch.nn.ModuleList(Block(D, HEADS) for _ in range(N_BLOCKS))
        self.ln_f = torch.nn.LayerNorm(D)
        self.head = torch.nn.Linear(D, VOCAB, bias=False)

    def forward(self, tokens):
        pos = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.tok_emb(tokens) + self.pos_emb(pos)
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x) if i in self.checkpointed else block(x)
        return self.head(self.ln_f(x))


parser = argparse.ArgumentParser()
parser.add_argument("--checkpoint", choices=("none", "all", "every-other"), default="none")
parser.add_argument("--steps", type=int, default=3)
args = parser.parse_args()
checkpointed = {"none": (), "all": tuple(range(N_BLOCKS)),
                "every-other": tuple(range(0, N_BLOCKS, 2))}[args.checkpoint]

torch.manual_seed(0)
model = GPT(checkpointed)
opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
tokens = torch.randint(0, VOCAB, (B, T))
targets = torch.roll(tokens, -1, dims=1)
for _ in range(args.steps):
    opt.zero_grad()
    logits = model(tokens)
    loss = torch.nn.functional.cross_entropy(logits.view(-1, VOCAB), targets.view(-1))
    loss.backward()
    opt.step()
print("trained", args.steps, "steps")
