"""memscope's Python startup hook (put on PYTHONPATH by `memscope-cli record`).

Python imports the first `sitecustomize` on sys.path at startup; this one is
found first, so it must also run the one it shadows (Debian's, a virtualenv's,
the user's). It never breaks the program: any failure of memscope's own part
prints one line and the program runs unrecorded. The recording itself stays
dormant (no torch import here) until the program imports torch.
"""
import os as _os
import sys as _sys


def _memscope_activate():
    if _os.environ.get("MEMSCOPE_HOOK") != "1":
        return
    try:
        import memscope_hook
        memscope_hook.activate()
    except Exception as exc:  # never let the profiler break the user's program
        _sys.stderr.write("memscope hook: start-up failed (%s: %s); recording without it\n"
                          % (type(exc).__name__, exc))


def _memscope_chain():
    """Run the next sitecustomize on sys.path, skipping this file's folder."""
    try:
        import importlib.machinery
        import importlib.util
        here = _os.path.dirname(_os.path.realpath(__file__))
        path = [p for p in _sys.path
                if isinstance(p, str) and _os.path.realpath(p or _os.curdir) != here]
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
        if spec is None or spec.loader is None:
            return None
        module = importlib.util.module_from_spec(spec)
    except Exception as exc:
        _sys.stderr.write("memscope hook: looking for the next sitecustomize failed (%s); "
                          "recording without it\n" % exc)
        return None
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        # What site.py itself prints for a failing sitecustomize.
        _sys.stderr.write("Error in sitecustomize; set PYTHONVERBOSE for traceback:\n"
                          "%s: %s\n" % (type(exc).__name__, exc))
        return None
    # Code that does `from sitecustomize import x` still finds the user's names.
    g = globals()
    for name, value in vars(module).items():
        if not name.startswith("__") and name not in g:
            g[name] = value
    return module


# Ours first, so that a torch import inside the chained file is seen too.
_memscope_activate()
_memscope_chained = _memscope_chain()
