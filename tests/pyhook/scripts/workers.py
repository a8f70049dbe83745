"""Training fed by forked DataLoader workers, plus a spawned helper process
that imports torch: only the training process has phases to record."""
import multiprocessing

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, TensorDataset


def helper(q):
    q.put(float(torch.ones(3).sum()))


def main():
    ctx = multiprocessing.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=helper, args=(q,))
    p.start()
    print("helper", q.get(timeout=120))
    p.join()
    data = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
    loader = DataLoader(data, batch_size=16, num_workers=2,
                        multiprocessing_context=multiprocessing.get_context("fork"))
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        opt.zero_grad()
        nn.functional.mse_loss(model(x), y).backward()
        opt.step()
    print("done")


if __name__ == "__main__":
    main()
