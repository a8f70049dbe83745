# memscope's in-process API on a plain training loop (no memscope-cli record):
#   usage: train_api.py OUT
# 3 steps unrecorded, then `with memscope.recording(OUT, steps=2)` around 4
# steps (the window holds the 2 steps after it began), then start()/stop()
# around 2 steps; prints the traces each wrote, one per line ("trace PATH"),
# and the control socket attachable() made ("socket PATH").
import sys

import torch

import memscope_hook as memscope


def main():
    out = sys.argv[1]
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.randn(32, 64)
    target = torch.randint(0, 10, (32,))
    socket_path = memscope.attachable(out)
    print("socket %s" % socket_path, flush=True)

    def step():
        opt.zero_grad()
        torch.nn.functional.cross_entropy(model(data), target).backward()
        opt.step()

    for _ in range(3):
        step()
    with memscope.recording(out, steps=2) as traces:
        for _ in range(4):
            step()
    for t in traces:
        print("trace %s" % t, flush=True)
    memscope.start(out)
    for _ in range(2):
        step()
    for t in memscope.stop():
        print("trace %s" % t, flush=True)
    print("trained", flush=True)


if __name__ == "__main__":
    main()
