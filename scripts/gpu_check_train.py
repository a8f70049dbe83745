#!/usr/bin/env python3
"""A small PyTorch training loop for scripts/gpu-check.sh.

Trains a few transformer layers on random data and pushes NVTX ranges
("step N", "forward", "backward", "optimizer") through torch.cuda.nvtx, the
way users annotate their own loops. Writes what PyTorch itself measured
(peak reserved and allocated bytes, step times) as JSON, for the check to
compare with what memscope recorded.
"""

import argparse
import json
import os
import statistics
import sys
import time


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=10, help="steps left out of the timing")
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--result", required=True, help="JSON file to write")
    args = parser.parse_args()

    import torch

    if not torch.cuda.is_available():
        print("gpu_check_train: torch.cuda.is_available() is False", file=sys.stderr)
        return 2
    device = torch.device("cuda")
    torch.manual_seed(0)

    layer = torch.nn.TransformerEncoderLayer(
        d_model=args.hidden, nhead=max(1, args.hidden // 64), dim_feedforward=4 * args.hidden,
        batch_first=True, dropout=0.1)
    model = torch.nn.TransformerEncoder(layer, num_layers=args.layers, enable_nested_tensor=False).to(device)
    head = torch.nn.Linear(args.hidden, 1).to(device)
    params = list(model.parameters()) + list(head.parameters())
    optimizer = torch.optim.AdamW(params, lr=1e-4)
    nvtx = torch.cuda.nvtx

    step_times = []
    for step in range(args.steps):
        x = torch.randn(args.batch, args.seq, args.hidden, device=device)
        y = torch.randn(args.batch, args.seq, 1, device=device)
        torch.cuda.synchronize()
        start = time.perf_counter()
        nvtx.range_push(f"step {step}")
        nvtx.range_push("forward")
        loss = torch.nn.functional.mse_loss(head(model(x)), y)
        nvtx.range_pop()
        nvtx.range_push("backward")
        loss.backward()
        nvtx.range_pop()
        nvtx.range_push("optimizer")
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        nvtx.range_pop()
        nvtx.range_pop()
        torch.cuda.synchronize()
        if step >= args.warmup:
            step_times.append(time.perf_counter() - start)
        if step == args.steps // 2:
            nvtx.mark("half way")

    result = {
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "caching_disabled": os.environ.get("PYTORCH_NO_CUDA_MEMORY_CACHING") == "1",
        "max_memory_reserved": torch.cuda.max_memory_reserved(),
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "steps_timed": len(step_times),
        "step_time_median_s": statistics.median(step_times) if step_times else None,
        "step_time_mean_s": statistics.fmean(step_times) if step_times else None,
        "final_loss": float(loss.item()),
    }
    with open(args.result, "w", encoding="utf-8") as out:
        json.dump(result, out, indent=2)
    print(f"gpu_check_train: {len(step_times)} timed steps, median {result['step_time_median_s'] * 1e3:.2f} ms, "
          f"max reserved {result['max_memory_reserved']} B")
    return 0


if __name__ == "__main__":
    sys.exit(main())
