#!/usr/bin/env python3
"""What an idle hook (`record --idle`, memscope_hook.attachable()) costs, part
by part, measured in one process before and after the hook goes in, each as
the best of many repetitions (steady on a loaded machine, where whole-run
step times vary by several percent: bench_record_idle.py):

  - a module call (the global forward pre/post hooks that count phases);
  - a CPU tensor allocation and free (the capture library's live count);

then the step of roles_train.py's model (a CPU transformer, AdamW) is counted:
module calls per step (a counting hook), CPU allocations per step (the
capture library's log of one step), and its step time, giving the estimated
idle overhead per step.

usage: PYTHONPATH=<build>/share/memscope/pyhook bench_idle_hooks.py [--layers N]
Prints the per-call costs, the counts, and "estimated idle overhead: X % of a step".
A benchmark that prints figures, never a pass/fail test.
"""
import argparse
import os
import statistics
import tempfile
import time

import torch
import torch.nn as nn


def best(fn, reps):
    b = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        b = min(b, time.perf_counter() - t)
    return b


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)
    d, vocab = 256, 1024
    model = nn.Sequential(nn.Embedding(vocab, d),
                          *[nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
                            for _ in range(args.layers)],
                          nn.Linear(d, vocab))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    tokens = torch.randint(0, vocab, (4, 32))

    def step():
        opt.zero_grad(set_to_none=True)
        nn.functional.cross_entropy(model(tokens).view(-1, vocab), tokens.view(-1)).backward()
        opt.step()

    for _ in range(3):
        step()
    # What one step does: module calls (a counting hook) and CPU allocations.
    calls = [0]
    handle = torch.nn.modules.module.register_module_forward_pre_hook(
        lambda m, a: calls.__setitem__(0, calls[0] + 1))
    step()
    handle.remove()
    step_s = statistics.median([best(step, 1) for _ in range(15)])

    seq = nn.Sequential(*[nn.Identity() for _ in range(1000)])
    x = torch.zeros(1)

    def thousand_calls():
        seq(x)

    def ten_thousand_allocs():
        for _ in range(10000):
            torch.empty(16)

    c0, a0 = best(thousand_calls, 50), best(ten_thousand_allocs, 30)
    import memscope_hook
    out = tempfile.mkdtemp(prefix="memscope-bench-hooks-")
    os.environ.pop("XDG_RUNTIME_DIR", None)
    memscope_hook.attachable(out)
    c1, a1 = best(thousand_calls, 50), best(ten_thousand_allocs, 30)
    # CPU allocations in a step: the capture library's log of one step (its
    # first records are the allocations alive when it opened).
    capture = memscope_hook._session.capture
    allocs = -1
    if capture is not None:
        alive = capture.live_count()
        capture.open_window(out)
        step()
        capture.close_window()
        records = (os.path.getsize(os.path.join(out, "cpu-events.bin")) - 16) // 24 - alive
        allocs = records // 2  # an allocation and its free
    per_call = max(0.0, (c1 - c0) / 1000)
    per_alloc = max(0.0, (a1 - a0) / 10000)
    print("module call: +%.2f us (%.2f -> %.2f us)" % (per_call * 1e6, c0 * 1e3, c1 * 1e3))
    print("CPU allocation and free: +%.3f us (%.3f -> %.3f us)"
          % (per_alloc * 1e6, a0 * 1e2, a1 * 1e2))
    print("a step of %d layers: %.1f ms, %d module calls, %d CPU allocations"
          % (args.layers, step_s * 1e3, calls[0], allocs))
    extra = calls[0] * per_call + allocs * per_alloc
    print("estimated idle overhead: %.2f %% of a step (%.3f ms)" % (100 * extra / step_s,
                                                                   extra * 1e3))


if __name__ == "__main__":
    main()
