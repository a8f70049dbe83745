"""Notice torch.profiler / autograd.profiler sessions: Kineto registers its own
CUPTI activity callbacks, after which memscope's CUPTI tracer in the same
process stops receiving records. The user is told once; hook.json lists every
session start so the viewer can mark where the CUPTI trace goes blind."""
import functools
import importlib

MESSAGE = ("memscope: torch.profiler started; it takes CUPTI over, so the CUPTI trace stops "
           "receiving records from here on (the allocator history is unaffected)")


def install(torch, on_start):
    """on_start(what) is called the first time each profiler object starts."""
    done = []
    try:
        profiler = importlib.import_module("torch.profiler")
        cls = getattr(profiler, "profile", None)
        if cls is not None:
            for name in ("start", "__enter__"):
                if _wrap(cls, name, "torch.profiler.profile started", on_start):
                    done.append("torch.profiler.profile." + name)
    except Exception:
        pass
    try:
        cls = torch.autograd.profiler.profile
        if _wrap(cls, "__enter__", "torch.autograd.profiler.profile started", on_start):
            done.append("torch.autograd.profiler.profile.__enter__")
    except Exception:
        pass
    return done


def _wrap(cls, name, what, on_start):
    original = getattr(cls, name, None)
    if original is None or getattr(original, "_memscope_wrapped", False):
        return False

    @functools.wraps(original)
    def wrapper(self, *args, **kwargs):
        try:
            # torch.profiler.profile.__enter__ calls start(): one entry per object.
            if not getattr(self, "_memscope_seen", False):
                self._memscope_seen = True
                on_start(what)
        except Exception:
            pass
        return original(self, *args, **kwargs)

    wrapper._memscope_wrapped = True
    setattr(cls, name, wrapper)
    return True
