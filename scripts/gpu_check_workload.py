#!/usr/bin/env python3
"""Plain PyTorch workloads for the GPU check (scripts/gpu_check.py).

No memscope code and no NVTX: the phases must come from memscope's automatic
hooks. Each mode writes what PyTorch itself measured as JSON, for the check to
compare with what `memscope-cli record` recorded.

  train    transformer layers, half of them under torch.utils.checkpoint,
           AdamW; step times after warm-up; optional torch.profiler session
  smoke    one 1 GiB tensor, freed, empty_cache(); wall-clock times around it
  forever  train until killed (for the SIGTERM check)
"""

import argparse
import json
import os
import statistics
import sys
import time


def build(args, torch, device):
    torch.manual_seed(0)
    layers = torch.nn.ModuleList(
        torch.nn.TransformerEncoderLayer(
            d_model=args.hidden, nhead=max(1, args.hidden // 64), dim_feedforward=4 * args.hidden,
            batch_first=True, dropout=0.0)
        for _ in range(args.layers)).to(device)
    head = torch.nn.Linear(args.hidden, 1).to(device)

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = layers
            self.head = head

        def forward(self, x):
            from torch.utils.checkpoint import checkpoint
            for i, layer in enumerate(self.layers):
                if i % 2 == 0 and args.checkpoint:
                    x = checkpoint(layer, x, use_reentrant=False)
                else:
                    x = layer(x)
            return self.head(x)

    return Model()


def train(args, forever=False):
    import torch
    cuda = args.device == "cuda"
    if cuda and not torch.cuda.is_available():
        print("gpu_check_workload: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    model = build(args, torch, device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    profiler = None
    step_times = []
    step = 0
    while forever or step < args.steps:
        if args.profile_at >= 0 and step == args.profile_at:
            activities = [torch.profiler.ProfilerActivity.CPU]
            if cuda:
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            profiler = torch.profiler.profile(activities=activities)
            profiler.start()
        x = torch.randn(args.batch, args.seq, args.hidden, device=device)
        y = torch.randn(args.batch, args.seq, 1, device=device)
        sync()
        start = time.perf_counter()
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        sync()
        if step >= args.warmup:
            step_times.append(time.perf_counter() - start)
        if profiler is not None and step == args.profile_at + 2:
            profiler.stop()
            profiler = None
        step += 1
        if forever and step == args.warmup:
            print("gpu_check_workload: warm", flush=True)

    result = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if cuda else "cpu",
        "max_memory_allocated": torch.cuda.max_memory_allocated() if cuda else None,
        "max_memory_reserved": torch.cuda.max_memory_reserved() if cuda else None,
        "steps": step,
        "steps_timed": len(step_times),
        "step_time_median_s": statistics.median(step_times) if step_times else None,
        "final_loss": float(loss.item()),
    }
    write(args.result, result)
    print(f"gpu_check_workload: {len(step_times)} timed steps, median "
          f"{(result['step_time_median_s'] or 0) * 1e3:.2f} ms")
    return 0


def smoke(args):
    import torch
    if not torch.cuda.is_available():
        print("gpu_check_workload: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    torch.cuda.init()
    torch.cuda.synchronize()
    before = time.time_ns()
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    after_alloc = time.time_ns()
    del x
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    after_free = time.time_ns()
    write(args.result, {"before_ns": before, "after_alloc_ns": after_alloc,
                        "after_free_ns": after_free,
                        "max_memory_reserved": torch.cuda.max_memory_reserved()})
    return 0


def write(path, result):
    if path:
        with open(path, "w", encoding="utf-8") as out:
            json.dump(result, out, indent=2)


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=["train", "smoke", "forever"])
    parser.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--warmup", type=int, default=8, help="steps left out of the timing")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--checkpoint", action="store_true", help="checkpoint every other layer")
    parser.add_argument("--profile-at", type=int, default=-1,
                        help="start torch.profiler at this step, for three steps")
    parser.add_argument("--result", help="JSON file to write")
    args = parser.parse_args()
    if args.mode == "smoke":
        return smoke(args)
    return train(args, forever=args.mode == "forever")


if __name__ == "__main__":
    sys.exit(main())
