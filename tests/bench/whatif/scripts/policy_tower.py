"""A tower of residual MLP blocks whose widths differ (a non-uniform layer
chain: block k expands to width * EXPANSION[k]), trained on CPU as a user
would write it. Some layers hold eight times the activations of others for
about the same share of time per byte, so the cheapest way to a budget is
not a uniform policy.

Prints the loss of each step. usage: policy_tower.py [--steps N]
[--width D] [--tokens N] [--setup FILE]"""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

import hand_policies as hp

EXPANSION = [8, 1, 4, 1, 8, 2, 1, 4]


class Block(nn.Module):
    def __init__(self, d, expansion):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.up = nn.Linear(d, d * expansion)
        self.down = nn.Linear(d * expansion, d)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.norm(x))))


class Tower(nn.Module):
    def __init__(self, d, classes):
        super().__init__()
        self.embed = nn.Linear(d, d)
        self.layers = nn.ModuleList(Block(d, e) for e in EXPANSION)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x)
        for layer in self.layers:
            x = layer(x)
        return self.head(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--setup", help="code to run after the model is built, with `model` in scope "
                    "(whatif --emit pytorch's output)")
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--tokens", type=int, default=2048)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = Tower(args.width, 16)
    hp.paste(args.setup, model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(args.steps):
        x = torch.randn(args.tokens, args.width)
        y = torch.randint(0, 16, (args.tokens,))
        opt.zero_grad(set_to_none=True)
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        print("step %d loss %.6f" % (step, loss.item()), flush=True)


if __name__ == "__main__":
    main()
