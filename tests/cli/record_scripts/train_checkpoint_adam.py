# A plain PyTorch training loop, with no memscope code: what a user runs under
# `memscope-cli record`. Blocks 0 and 2 are checkpointed (recomputed in
# backward); Adam; zero_grad at the start of each step.
import sys

import torch
from torch.utils.checkpoint import checkpoint


class Block(torch.nn.Module):
    def __init__(self, d):
        super().__init__()
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        return x + self.down(torch.relu(self.up(x)))


class Net(torch.nn.Module):
    def __init__(self, d=128, n=4):
        super().__init__()
        self.blocks = torch.nn.ModuleList(Block(d) for _ in range(n))

    def forward(self, x):
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x) if i % 2 == 0 else block(x)
        return x


steps = int(sys.argv[1]) if len(sys.argv) > 1 else 3
torch.manual_seed(0)
model = Net()
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
for _ in range(steps):
    opt.zero_grad()
    x = torch.randn(256, 128, requires_grad=True)
    loss = model(x).pow(2).mean()
    loss.backward()
    opt.step()
print("trained", steps, "steps")
