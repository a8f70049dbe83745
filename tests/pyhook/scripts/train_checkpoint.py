"""A plain PyTorch training loop: an MLP of blocks, some checkpointed, Adam.

usage: train_checkpoint.py STEPS REENTRANT(1|0) [--forever]
"""
import sys
import time

import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc1 = nn.Linear(width, width * 2)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(width * 2, width)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(x)))


class Net(nn.Module):
    def __init__(self, width=32, blocks=4, reentrant=True):
        super().__init__()
        self.stem = nn.Linear(16, width)
        self.blocks = nn.ModuleList(Block(width) for _ in range(blocks))
        self.head = nn.Linear(width, 1)
        self.reentrant = reentrant

    def forward(self, x):
        x = self.stem(x)
        for i, block in enumerate(self.blocks):
            if i % 2 == 1:
                x = checkpoint(block, x, use_reentrant=self.reentrant)
            else:
                x = block(x)
        return self.head(x)


def main():
    steps = int(sys.argv[1])
    reentrant = sys.argv[2] == "1"
    forever = "--forever" in sys.argv
    torch.manual_seed(0)
    model = Net(reentrant=reentrant)
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    x = torch.randn(8, 16)
    y = torch.randn(8, 1)
    step = 0
    while forever or step < steps:
        opt.zero_grad()
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
        opt.step()
        step += 1
        if forever:
            time.sleep(0.05)
    print("done", float(loss))


if __name__ == "__main__":
    main()
