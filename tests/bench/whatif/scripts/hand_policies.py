"""Checkpointing policies applied by hand, as a user of PyTorch 1.13 would
write them, with no memscope code: the ground truth that memscope's
predictions (`whatif --policy …`) are held to.

- checkpoint_layers: torch.utils.checkpoint on chosen layers (non-reentrant);
- sequential: torch.utils.checkpoint.checkpoint_sequential itself;
- save_list_checkpoint: PyTorch 2.4's selective activation checkpointing
  (create_selective_checkpoint_contexts: MUST_SAVE for the listed ops,
  PREFER_RECOMPUTE for the rest) rebuilt for 1.13 from its parts: a
  non-reentrant checkpoint whose forward caches the listed ops' outputs
  (a TorchDispatchMode below autograd, as SAC's caching mode) and whose
  recompute returns them instead of running those ops again.
"""
import torch
from torch.utils.checkpoint import checkpoint
from torch.utils._python_dispatch import TorchDispatchMode

MATMUL_OPS = frozenset({"aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm"})


def _op_name(func):
    return func._schema.name  # "aten::addmm"


def _call(func, args, kwargs):
    # 1.13's python dispatch hands a wrapped number (the 8.0 of `x / 8.0`)
    # to the mode as a Python float; the checkpoint's own pack hook then
    # detaches it inside the mode, which aten::detach refuses.
    if func is torch.ops.aten.detach.default and args and not isinstance(args[0], torch.Tensor):
        return torch.tensor(args[0])
    return func(*args, **(kwargs or {}))


class _CacheOutputs(TorchDispatchMode):
    def __init__(self, ops, cache):
        super().__init__()
        self.ops, self.cache = ops, cache

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = _call(func, args, kwargs)
        if _op_name(func) in self.ops:
            # A detached alias: the same memory, kept until the recompute.
            self.cache.append(out.detach())
        return out


class _ReplayOutputs(TorchDispatchMode):
    def __init__(self, ops, cache):
        super().__init__()
        self.ops, self.cache = ops, cache

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if _op_name(func) in self.ops and self.cache:
            return self.cache.pop(0)
        return _call(func, args, kwargs)


def save_list_checkpoint(fn, x, ops):
    """fn(x) checkpointed, the outputs of `ops` saved, everything else recomputed."""
    cache = []
    calls = [0]

    def run(inp):
        calls[0] += 1
        mode = _CacheOutputs(ops, cache) if calls[0] == 1 else _ReplayOutputs(ops, cache)
        with mode:
            return fn(inp)

    return checkpoint(run, x, use_reentrant=False)


def checkpointed(fn, x):
    return checkpoint(fn, x, use_reentrant=False)


def every_nth(n, count):
    """torchtitan's selective_ac_option=N: its wrapper counts the layers it is
    given from 1 and wraps those whose count is a multiple of N."""
    return {i for i in range(count) if (i + 1) % n == 0}


def paste(path, model):
    """Runs the code in `path` as if pasted right after the model is built
    (what `memscope-cli whatif --emit pytorch` prints), with `model` in scope."""
    if not path:
        return
    with open(path) as f:
        exec(compile(f.read(), path, "exec"), {"model": model, "__name__": "__pasted__"})
