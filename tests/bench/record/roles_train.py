"""The training loop bench_record_roles.py records: a CPU transformer (12
encoder layers, d=256, about 150 parameter tensors), AdamW, gradients set to
None each step. Prints the median time of a step after the warm-up steps:

  median step: 12.345 ms over 30 steps (main thread cpu 12.000 ms)

(the CPU time of the training thread, time.thread_time, is what other work on a
shared machine disturbs least)

usage: roles_train.py [--steps N] [--warmup N] [--layers N]"""
import argparse
import statistics
import time

import torch
import torch.nn as nn


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--layers", type=int, default=12)
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(1)   # steadier times on a shared machine
    d, vocab = 256, 1024
    model = nn.Sequential(nn.Embedding(vocab, d),
                          *[nn.TransformerEncoderLayer(d, 4, 4 * d, dropout=0.0, batch_first=True)
                            for _ in range(args.layers)],
                          nn.Linear(d, vocab))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    times, cpu = [], []
    for i in range(args.warmup + args.steps):
        tokens = torch.randint(0, vocab, (4, 32))
        start, start_cpu = time.perf_counter(), time.thread_time()
        opt.zero_grad(set_to_none=True)
        loss = nn.functional.cross_entropy(model(tokens).view(-1, vocab), tokens.view(-1))
        loss.backward()
        opt.step()
        if i >= args.warmup:
            times.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - start_cpu)
    print("median step: %.3f ms over %d steps (main thread cpu %.3f ms)"
          % (1e3 * statistics.median(times), len(times), 1e3 * statistics.median(cpu)))


if __name__ == "__main__":
    main()
