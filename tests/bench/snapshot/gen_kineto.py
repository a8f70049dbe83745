#!/usr/bin/env python3
"""Writes a synthetic kineto chrome trace as torch.profiler(profile_memory=True)
.export_chrome_trace writes one, for memscope-bench-snapshot's kineto import
(memscope against json.load).

  gen_kineto.py OUT [--mb SIZE_MB] [--seed N]

Per step: a ProfilerStep#N range; forward ops (aten::linear, aten::relu, ...)
that allocate activations and temporaries, backward ops
(autograd::engine::evaluate_function: ...Backward0) that free activations and
make gradients, an optimizer step that frees the gradients. Every allocation
and free is a "[memory]" instant event (ph "i", args Addr, Bytes (negative for a
free), Total Allocated, Total Reserved, Device Type 1, Device Id 0), as
plugins/kineto reads them. Writes until the file reaches SIZE_MB (default 100)
and prints the events written. Exit 2 on a bad argument.
"""
import random
import sys

USAGE = "usage: gen_kineto.py OUT [--mb SIZE_MB] [--seed N]"


def fail(message):
    sys.stderr.write(f"gen_kineto.py: {message}\n{USAGE}\n")
    sys.exit(2)


def parse(argv):
    out, mb, seed = None, 100, 1
    i = 0
    while i < len(argv):
        a = argv[i]
        if a in ("-h", "--help"):
            print(USAGE)
            print(__doc__.split("\n\n", 2)[2])
            sys.exit(0)
        if a in ("--mb", "--seed"):
            if i + 1 >= len(argv):
                fail(f"{a} needs a value")
            try:
                v = int(argv[i + 1])
            except ValueError:
                fail(f"{a}: '{argv[i + 1]}' is not an integer")
            if a == "--mb":
                if not 1 <= v <= 65536:
                    fail(f"--mb: {v} is out of range [1, 65536]")
                mb = v
            else:
                seed = v
            i += 2
            continue
        if a.startswith("-") or out is not None:
            fail(f"unknown option {a}" if a.startswith("-") else f"unexpected argument '{a}'")
        out = a
        i += 1
    if out is None:
        fail("missing OUT (the .json to write)")
    return out, mb, seed


FORWARD = ["aten::linear", "aten::addmm", "aten::relu", "aten::layer_norm", "aten::gelu",
           "aten::dropout", "aten::softmax", "aten::matmul", "aten::add", "aten::mul"]
BACKWARD = ["AddmmBackward0", "ReluBackward0", "NativeLayerNormBackward0", "GeluBackward0",
            "SoftmaxBackward0", "MulBackward0", "AddBackward0", "MmBackward0"]


def main():
    out, mb, seed = parse(sys.argv[1:])
    rng = random.Random(seed)
    target = mb << 20
    pid, tid = 4242, 4242
    ts = 1754641328380.0  # µs
    allocated = 0
    reserved = 0
    next_addr = 0x7F3A00000000
    cached = {}  # size -> freed addresses
    counts = {"memory": 0, "ops": 0, "steps": 0}
    parts = []
    written = 0

    f = open(out, "w", encoding="ascii")

    def emit(text):
        nonlocal written
        parts.append(text)
        written += len(text) + 2
        if len(parts) >= 4096:
            f.write(",\n".join(parts))
            f.write(",\n")
            parts.clear()

    def memory(addr, nbytes):
        nonlocal ts, allocated, reserved
        allocated += nbytes
        while allocated > reserved:
            reserved += 20 << 20
        ts += 0.5 + rng.random()
        counts["memory"] += 1
        emit('{"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", '
             f'"pid": {pid}, "tid": {tid}, "ts": {ts:.3f}, '
             f'"args": {{"Total Reserved": {reserved}, "Total Allocated": {allocated}, '
             f'"Bytes": {nbytes}, "Addr": {addr}, "Device Id": 0, "Device Type": 1, '
             f'"Ev Idx": {counts["memory"]}}}}}')

    def alloc(size):
        nonlocal next_addr
        free = cached.get(size)
        if free:
            a = free.pop()
        else:
            a = next_addr
            next_addr += (size + 511) // 512 * 512
        memory(a, size)
        return a

    def release(a, size):
        memory(a, -size)
        cached.setdefault(size, []).append(a)

    def op(name, start, end):
        counts["ops"] += 1
        emit(f'{{"ph": "X", "cat": "cpu_op", "name": "{name}", "pid": {pid}, "tid": {tid}, '
             f'"ts": {start:.3f}, "dur": {end - start:.3f}, '
             f'"args": {{"External id": {counts["ops"]}, "Record function id": 0, '
             f'"Sequence number": {counts["ops"]}, "Fwd thread id": 0}}}}')

    f.write('{\n  "schemaVersion": 1,\n  "deviceProperties": [{"id": 0, "name": "NVIDIA H100 '
            '80GB HBM3", "totalGlobalMem": 85045231616}],\n  "distributedInfo": {"backend": '
            '"nccl", "rank": 0, "world_size": 1},\n  "traceName": "synthetic",\n'
            '  "traceEvents": [\n')
    params = [alloc(rng.choice([1 << 20, 4 << 20, 16 << 20])) for _ in range(64)]
    del params
    layers = 24
    while written < target:
        step = counts["steps"]
        counts["steps"] += 1
        step_start = ts
        saved = []
        for k in range(layers):
            for _ in range(rng.randint(3, 8)):
                start = ts
                size = 512 << rng.randint(0, 14)
                saved.append((alloc(size), size))
                tmp = [(alloc(s), s) for s in (512 << rng.randint(0, 12) for _ in range(2))]
                for a, s in tmp:
                    release(a, s)
                op(rng.choice(FORWARD), start, ts + 1)
                ts += 1.5
        grads = []
        for a, s in reversed(saved):
            start = ts
            g = 512 << rng.randint(0, 12)
            grads.append((alloc(g), g))
            release(a, s)
            op("autograd::engine::evaluate_function: " + rng.choice(BACKWARD), start, ts + 1)
            ts += 1.5
        start = ts
        for a, s in grads:
            release(a, s)
        op("Optimizer.step#SGD.step", start, ts + 1)
        ts += 2
        op(f"ProfilerStep#{step}", step_start, ts)
        ts += 5
    if parts:
        f.write(",\n".join(parts))
        f.write("\n")
    else:
        f.write('{"ph": "i", "name": "end", "pid": 0, "tid": 0, "ts": 0}\n')
    f.write('  ],\n  "displayTimeUnit": "ms",\n  "baseTimeNanoseconds": 1754641000000000000\n}\n')
    f.close()
    print(f"wrote {out}: {counts['memory']} [memory] events, {counts['ops']} ops, "
          f"{counts['steps']} steps")


if __name__ == "__main__":
    main()
