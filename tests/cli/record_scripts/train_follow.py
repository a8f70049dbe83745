# A plain PyTorch training loop with no memscope code, for attach: a small MLP
# with Adam, STEPS steps; each step sleeps SLEEP seconds so that attach can
# catch it running. Prints one line per step ("step N loss ...") and
# "trained" at the end; with --exit-at K it leaves with os._exit-free
# sys.exit(0) right after step K's forward (a job ending mid-window).
#
# usage: train_follow.py [STEPS] [--sleep S] [--exit-at K]
import sys
import time

import torch


def main():
    args = sys.argv[1:]
    steps = int(args[0]) if args and not args[0].startswith("--") else 40
    sleep = float(args[args.index("--sleep") + 1]) if "--sleep" in args else 0.1
    exit_at = int(args[args.index("--exit-at") + 1]) if "--exit-at" in args else -1
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                torch.nn.Linear(256, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    data = torch.randn(32, 64)
    target = torch.randint(0, 10, (32,))
    for step in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(data), target)
        if step == exit_at:
            print("exiting at step %d" % step, flush=True)
            sys.exit(0)
        loss.backward()
        opt.step()
        print("step %d loss %.4f" % (step, loss.item()), flush=True)
        time.sleep(sleep)
    print("trained", flush=True)


if __name__ == "__main__":
    main()
