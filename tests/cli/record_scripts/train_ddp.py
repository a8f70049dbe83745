"""A distributed data-parallel training on CPU, as users write one: an MLP
wrapped in DistributedDataParallel over gloo, AdamW, rank r training on
(r + 1) times the batch of rank 0. No memscope code.

  python3 train_ddp.py --launch 2 --steps 3

starts the ranks itself, each a process with the variables torchrun sets
(MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE, LOCAL_RANK); without --launch the
script is one rank and reads them. (Debian's torchrun, PyTorch 1.13 on Python
3.11, fails at start-up, so the test launches the ranks this way.)
"""
import argparse
import os
import socket
import subprocess
import sys

import torch
import torch.distributed as dist
from torch import nn

BATCH = 256
WIDTH = 256


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(ranks, steps):
    port = free_port()
    procs = []
    for rank in range(ranks):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank),
                   WORLD_SIZE=str(ranks), LOCAL_RANK=str(rank))
        procs.append(subprocess.Popen([sys.executable, os.path.abspath(__file__),
                                       "--steps", str(steps)], env=env))
    return max(p.wait() for p in procs)


def train(steps):
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH),
                          nn.GELU(), nn.Linear(WIDTH, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.AdamW(ddp.parameters(), lr=1e-3)
    batch = BATCH * (rank + 1)  # uneven batches: rank 1 holds more activations
    for _ in range(steps):
        x = torch.randn(batch, WIDTH)
        y = torch.randint(0, 10, (batch,))
        loss = nn.functional.cross_entropy(ddp(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    dist.barrier()
    print("rank %d trained %d steps" % (rank, steps), flush=True)
    dist.destroy_process_group()
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--launch", type=int, metavar="N", help="start N ranks on this machine")
    parser.add_argument("--steps", type=int, default=3)
    args = parser.parse_args()
    return launch(args.launch, args.steps) if args.launch else train(args.steps)


if __name__ == "__main__":
    sys.exit(main())
