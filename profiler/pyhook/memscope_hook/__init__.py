"""memscope's in-process recorder for PyTorch programs (see README.md).

activate() only installs an import watcher; the work starts when torch has
finished importing (Session.install).
"""
import sys


def report_failure(what):
    """The one line a failure prints; the program goes on unrecorded."""
    try:
        sys.stderr.write("memscope hook: %s; recording without it\n" % what)
    except Exception:
        pass


def activate():
    from . import config, torch_watch
    cfg = config.Config.from_env()
    torch_watch.when_imported(lambda torch: _start(cfg, torch))


def _start(cfg, torch):
    try:
        from .session import Session
        Session(cfg, torch).install()
    except Exception as exc:
        report_failure("installing the PyTorch hooks failed (%s: %s)" % (type(exc).__name__, exc))
