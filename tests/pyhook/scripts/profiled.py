"""Training with torch.profiler around one step and the legacy autograd
profiler around another."""
import torch
import torch.nn as nn


def main():
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(4, 8), torch.randn(4, 1)

    def step():
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()

    step()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]):
        step()
    with torch.autograd.profiler.profile():
        step()
    print("done")


if __name__ == "__main__":
    main()
