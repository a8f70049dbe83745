"""A GPT-style transformer trained on CPU, written as a user would, with a
checkpointing policy applied by hand (hand_policies.py):

  full            every activation kept
  block           each layer checkpointed
  selective       only each layer's attention core checkpointed (scores,
                  mask, softmax, dropout, weighted sum), as Megatron's
                  --recompute-granularity selective
  save:matmul     each layer checkpointed, the outputs of mm/addmm/bmm saved
  save:aten::addmm  each layer checkpointed, the linear layers' outputs saved
  sequential:K    checkpoint_sequential(self.blocks, K, x)
  every:N         every N-th layer checkpointed (torchtitan's counting)

Prints the loss of each step. usage: policy_transformer.py [--policy P]
[--steps N] [--layers N] [--width D] [--seq T] [--batch B]"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint_sequential

import hand_policies as hp


class Attention(nn.Module):
    def __init__(self, d, heads, policy):
        super().__init__()
        self.heads, self.policy = heads, policy
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.drop = nn.Dropout(0.1)

    def core(self, qkv):
        b, h, t, _ = qkv.shape[0], self.heads, qkv.shape[1], None
        q, k, v = qkv.split(qkv.shape[-1] // 3, dim=-1)
        q = q.view(b, t, h, -1).transpose(1, 2)
        k = k.view(b, t, h, -1).transpose(1, 2)
        v = v.view(b, t, h, -1).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
        mask = torch.ones(t, t, dtype=torch.bool).tril()
        scores = scores.masked_fill(~mask, float("-inf"))
        weights = self.drop(F.softmax(scores, dim=-1))
        return (weights @ v).transpose(1, 2).reshape(b, t, -1)

    def forward(self, x):
        b, t, d = x.shape
        qkv = self.qkv(x.reshape(b * t, d)).view(b, t, 3 * d)
        y = hp.checkpointed(self.core, qkv) if self.policy == "selective" else self.core(qkv)
        return self.proj(y.reshape(b * t, d)).view(b, t, d)


class Block(nn.Module):
    def __init__(self, d, heads, policy):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = Attention(d, heads, policy)
        self.fc, self.out = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        b, t, d = x.shape
        h = F.gelu(self.fc(self.ln2(x).reshape(b * t, d)))
        return x + self.out(h).view(b, t, d)


class GPT(nn.Module):
    def __init__(self, vocab, d, heads, layers, seq, policy):
        super().__init__()
        self.policy = policy
        self.wte, self.wpe = nn.Embedding(vocab, d), nn.Embedding(seq, d)
        self.blocks = nn.Sequential(*[Block(d, heads, policy) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)
        n = len(self.blocks)
        self.checkpointed = set()
        if policy == "block" or policy.startswith("save:"):
            self.checkpointed = set(range(n))
        elif policy.startswith("every:"):
            self.checkpointed = hp.every_nth(int(policy[6:]), n)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        if self.policy.startswith("sequential:"):
            x = checkpoint_sequential(self.blocks, int(self.policy[11:]), x)
        else:
            for i, block in enumerate(self.blocks):
                if i not in self.checkpointed:
                    x = block(x)
                elif self.policy == "save:matmul":
                    x = hp.save_list_checkpoint(block, x, hp.MATMUL_OPS)
                elif self.policy == "save:aten::addmm":
                    x = hp.save_list_checkpoint(block, x, {"aten::addmm"})
                else:
                    x = hp.checkpointed(block, x)
        b, t, d = x.shape
        return self.head(self.ln(x).reshape(b * t, d))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--policy", default="full")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--setup", help="code to run after the model is built, with `model` in scope "
                    "(whatif --emit pytorch's output)")
    ap.add_argument("--layers", type=int, default=6)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--seq", type=int, default=128)
    ap.add_argument("--batch", type=int, default=8)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    vocab = 1024
    model = GPT(vocab, args.width, 4, args.layers, args.seq, args.policy)
    hp.paste(args.setup, model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        idx = torch.randint(0, vocab, (args.batch, args.seq))
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(idx), idx.view(-1))
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()
