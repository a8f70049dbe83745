"""Optimizer step inside backward: one SGD per parameter, stepped from a
gradient hook as soon as that parameter's gradient is ready (plain PyTorch).

usage: train_opt_in_backward.py STEPS
"""
import sys

import torch
import torch.nn as nn


def attach(model):
    optimizers = {}
    for p in model.parameters():
        opt = torch.optim.SGD([p], lr=1e-2)
        optimizers[p] = opt
        if hasattr(p, "register_post_accumulate_grad_hook"):  # PyTorch 2.1+
            def hook(param, opt=opt):
                opt.step()
                opt.zero_grad(set_to_none=True)
            p.register_post_accumulate_grad_hook(hook)
        else:
            def hook(grad, p=p, opt=opt):
                p.grad = grad
                opt.step()
                p.grad = None
                return grad
            p.register_hook(hook)
    return optimizers


def main():
    steps = int(sys.argv[1])
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.ReLU(), nn.Linear(32, 1))
    optimizers = attach(model)
    x = torch.randn(8, 16)
    y = torch.randn(8, 1)
    for _ in range(steps):
        loss = nn.functional.mse_loss(model(x), y)
        loss.backward()
    print("done", len(optimizers), float(loss))


if __name__ == "__main__":
    main()
