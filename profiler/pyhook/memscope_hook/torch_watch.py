"""Notice when `torch` has finished importing, without importing it ourselves.

A sys.meta_path finder answers only for the top-level name "torch": it asks the
finders behind it for the real spec and wraps that loader's exec_module, so the
callback runs right after torch/__init__.py has executed (still inside the
user's `import torch`). Other imports cost one string comparison; the finder
removes itself once torch is in.
"""
import sys


class _TorchFinder:
    def __init__(self, callback):
        self._callback = callback
        self._busy = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch" or self._busy:
            return None
        self._busy = True
        try:
            spec = None
            for finder in list(sys.meta_path):
                if finder is self:
                    continue
                find = getattr(finder, "find_spec", None)
                if find is None:
                    continue
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        finally:
            self._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        _wrap_loader(spec, self)
        return spec

    def done(self, module):
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass
        self._callback(module)


class _LoaderProxy:
    """For loaders that refuse a new attribute: delegate everything else."""

    def __init__(self, loader, exec_module):
        self._loader = loader
        self.exec_module = exec_module

    def __getattr__(self, name):
        return getattr(self._loader, name)


def _wrap_loader(spec, finder):
    loader = spec.loader
    original = loader.exec_module

    def exec_module(module):
        original(module)  # a failing torch import propagates untouched
        finder.done(module)

    try:
        loader.exec_module = exec_module
    except (AttributeError, TypeError):
        spec.loader = _LoaderProxy(loader, exec_module)


def when_imported(callback):
    """Call callback(torch) once torch is imported (now, if it already is)."""
    module = sys.modules.get("torch")
    if module is not None and getattr(module, "nn", None) is not None:
        callback(module)
        return
    sys.meta_path.insert(0, _TorchFinder(callback))
