"""Test scaffolding (not a user script): the training-loop shapes people write,
each running STEPS optimizer iterations, for the step-count tests.

usage: loops.py SHAPE STEPS [--exit MODE] [--fill PATH:K]
  SHAPE: zero_grad_start | zero_grad_end | set_to_none_false | model_zero_grad |
         accumulation | lr_scheduler | gan | eval_between | eval_after | no_optimizer |
         forever (zero_grad_start until killed, printing "step K" after each step)
  MODE (how the script ends): normal | os_exit | sigkill (kills itself after
         the last step)
  --fill PATH:K  after K iterations, fill the disk with PATH (until it is full)
         and train on: the recording's writes fail, the job must not notice
"""
import os
import signal
import sys

import torch
import torch.nn as nn

SHAPE, STEPS = sys.argv[1], int(sys.argv[2])
MODE = sys.argv[sys.argv.index("--exit") + 1] if "--exit" in sys.argv else "normal"
FILL = sys.argv[sys.argv.index("--fill") + 1].rsplit(":", 1) if "--fill" in sys.argv else None
torch.manual_seed(0)


def mlp():
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, 8))


model = mlp()
opt = torch.optim.SGD(model.parameters(), lr=0.01)
x, y = torch.randn(16, 32), torch.randn(16, 8)


def loss_of(m):
    return nn.functional.mse_loss(m(x), y)


steps_done = [0]


def fill_disk(path):
    with open(path, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass


def train_step():
    loss_of(model).backward()
    opt.step()
    steps_done[0] += 1
    if FILL and steps_done[0] == int(FILL[1]):
        fill_disk(FILL[0])


if SHAPE == "zero_grad_start":
    for _ in range(STEPS):
        opt.zero_grad()
        train_step()
elif SHAPE == "zero_grad_end":
    for _ in range(STEPS):
        train_step()
        opt.zero_grad()
elif SHAPE == "set_to_none_false":
    for _ in range(STEPS):
        train_step()
        opt.zero_grad(set_to_none=False)
elif SHAPE == "model_zero_grad":
    for _ in range(STEPS):
        model.zero_grad()
        train_step()
elif SHAPE == "accumulation":
    for _ in range(STEPS):
        for _ in range(3):
            (loss_of(model) / 3).backward()
        opt.step()
        opt.zero_grad()
elif SHAPE == "lr_scheduler":
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.9)
    for _ in range(STEPS):
        opt.zero_grad()
        train_step()
        sched.step()
elif SHAPE == "gan":
    gen, disc = mlp(), nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1))
    opt_g = torch.optim.Adam(gen.parameters(), lr=1e-3)
    opt_d = torch.optim.Adam(disc.parameters(), lr=1e-3)
    for _ in range(STEPS):
        opt_d.zero_grad()
        fake = gen(x).detach()
        loss_d = disc(fake).mean() - disc(y).mean()
        loss_d.backward()
        opt_d.step()
        opt_g.zero_grad()
        loss_g = -disc(gen(x)).mean()
        loss_g.backward()
        opt_g.step()
elif SHAPE == "eval_between":
    for k in range(STEPS):
        opt.zero_grad()
        train_step()
        if k % 2 == 0:
            model.eval()
            with torch.no_grad():
                for _ in range(3):
                    model(x)
            model.train()
elif SHAPE == "eval_after":
    for _ in range(STEPS):
        opt.zero_grad()
        train_step()
    with torch.no_grad():
        for _ in range(3):
            model(x)
elif SHAPE == "no_optimizer":
    for _ in range(STEPS):
        loss_of(model).backward()
        with torch.no_grad():
            for p in model.parameters():
                p -= 0.01 * p.grad
                p.grad = None
elif SHAPE == "forever":
    import time
    k = 0
    while True:
        opt.zero_grad()
        train_step()
        print("step", k, flush=True)
        k += 1
        time.sleep(0.02)
else:
    sys.exit("unknown shape " + SHAPE)

print("trained %d steps" % steps_done[0])
sys.stdout.flush()
if MODE == "os_exit":
    os._exit(0)
elif MODE == "sigkill":
    os.kill(os.getpid(), signal.SIGKILL)
