"""Module scopes in shapes the hook must name sensibly.

usage: modules.py gan STEPS    a generator and two discriminators of one class
                               (several roots); each discriminator runs twice
                               a step (real and fake): two scopes, one path
       modules.py fork         a step, then a forked child runs one of its own
                               (its log defines the modules again)
"""
import os
import sys

import torch
import torch.nn as nn


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1))

    def forward(self, x):
        return self.main(x)


def gan(steps):
    torch.manual_seed(0)
    g, ds = Generator(), [Discriminator(), Discriminator()]
    opt_g = torch.optim.Adam(g.parameters())
    opt_d = torch.optim.Adam([p for d in ds for p in d.parameters()])
    real = torch.randn(16, 4)
    for _ in range(steps):
        fake = g(torch.randn(16, 8))
        opt_d.zero_grad()
        loss_d = sum(d(real).mean() - d(fake.detach()).mean() for d in ds)
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = sum(-d(fake).mean() for d in ds)
        loss_g.backward()
        opt_g.step()


def step(model, opt):
    opt.zero_grad()
    model(torch.randn(16, 8)).sum().backward()
    opt.step()


def fork():
    model = Generator()
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    step(model, opt)
    pid = os.fork()
    if pid == 0:
        step(model, opt)
        sys.exit(0)  # atexit runs: the child writes its recording
    _, status = os.waitpid(pid, 0)
    step(model, opt)
    print("child", pid, "status", status)


if __name__ == "__main__":
    if sys.argv[1] == "gan":
        gan(int(sys.argv[2]))
    elif sys.argv[1] == "fork":
        fork()
    else:
        sys.exit("unknown shape " + sys.argv[1])
    print("done")
