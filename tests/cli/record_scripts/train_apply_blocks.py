"""A plain training script for `record --apply` (tests/cli/record_apply_test.py):
4 numbered blocks of Linear+GELU+Linear(+Dropout) with residuals, in a
ModuleList (`blocks.0` ... `blocks.3`), or in an nn.Sequential (`body`) with
--sequential; AdamW; deterministic (seeded, dropout included). Prints each
step's loss exactly (repr), so that runs with a policy applied can be
compared bit for bit with the plain run. Knows nothing of memscope.

usage: train_apply_blocks.py [--sequential] [--clip] [--steps N]
"""
import argparse

import torch
from torch import nn

D_IN, D, HIDDEN, TOKENS, BLOCKS = 64, 256, 1024, 512, 4


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, HIDDEN)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(HIDDEN, D)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc2(self.act(self.fc1(x))))


class Net(nn.Module):
    def __init__(self, sequential):
        super().__init__()
        self.embed = nn.Linear(D_IN, D)
        if sequential:
            self.body = nn.Sequential(*[Block() for _ in range(BLOCKS)])
        else:
            self.blocks = nn.ModuleList(Block() for _ in range(BLOCKS))
        self.head = nn.Linear(D, 1)

    def forward(self, x):
        x = self.embed(x)
        if hasattr(self, "body"):
            x = self.body(x)
        else:
            for block in self.blocks:
                x = block(x)
        return self.head(x)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sequential", action="store_true")
    ap.add_argument("--clip", action="store_true")
    ap.add_argument("--steps", type=int, default=4)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Net(args.sequential)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    data = torch.Generator().manual_seed(1)
    x = torch.randn(TOKENS, D_IN, generator=data)
    y = torch.randn(TOKENS, 1, generator=data)
    model.train()
    for step in range(args.steps):
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        if args.clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        print("step %d loss %r" % (step, loss.item()), flush=True)
    with torch.no_grad():
        model.eval()
        print("eval loss %r" % nn.functional.mse_loss(model(x), y).item(), flush=True)
    print("trained %d steps" % args.steps, flush=True)


if __name__ == "__main__":
    main()
