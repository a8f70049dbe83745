"""A small CNN with BatchNorm trained with SGD(momentum=0.9) on the CPU, for
record_roles_test.py: writes its own truth (the bytes of its parameters and
buffers, gradients and optimizer state after training) to --truth FILE.

usage: train_roles_cnn.py --truth FILE [--steps N]"""
import argparse
import json

import torch
import torch.nn as nn


class Block(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = nn.Conv2d(cin, cout, 1, bias=False) if cin != cout else nn.Identity()

    def forward(self, x):
        out = torch.relu(self.bn(self.conv(x)))
        out = self.bn2(self.conv2(out))
        out += self.skip(x)   # ResNet's in-place add
        return torch.relu(out)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32),
                                  nn.ReLU())
        self.blocks = nn.Sequential(Block(32, 64), Block(64, 64), Block(64, 128))
        self.head = nn.Linear(128, 10)

    def forward(self, x):
        x = self.blocks(self.stem(x))
        return self.head(torch.flatten(nn.functional.adaptive_avg_pool2d(x, 1), 1))


def tensor_bytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--truth", required=True)
    ap.add_argument("--steps", type=int, default=3)
    args = ap.parse_args()
    torch.manual_seed(0)
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    for _ in range(args.steps):
        x = torch.randn(8, 3, 16, 16)
        y = torch.randint(0, 10, (8,))
        opt.zero_grad()
        loss = nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    state = [v for s in opt.state.values() for v in s.values() if torch.is_tensor(v)]
    truth = {"parameter": tensor_bytes(list(model.parameters()) + list(model.buffers())),
             "gradient": tensor_bytes(p.grad for p in model.parameters() if p.grad is not None),
             "optimizer_state": tensor_bytes(state)}
    with open(args.truth, "w") as f:
        json.dump(truth, f)
    print("trained %d steps" % args.steps)


if __name__ == "__main__":
    main()
