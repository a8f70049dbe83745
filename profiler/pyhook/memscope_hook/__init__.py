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
    import os
    from . import config, torch_watch
    cfg = config.Config.from_env()
    # The acknowledgement pipe is record's to the process it started. The
    # processes this one starts (a launcher's ranks) do not get the pipe
    # (subprocess closes it), and an fd number they reuse for a file of their
    # own must not receive signal numbers: the variable stops here.
    os.environ.pop("MEMSCOPE_SIGNAL_ACK_FD", None)
    torch_watch.when_imported(lambda torch: _start(cfg, torch))


def _start(cfg, torch):
    try:
        from .session import Session
        Session(cfg, torch).install()
    except Exception as exc:
        report_failure("installing the PyTorch hooks failed (%s: %s)" % (type(exc).__name__, exc))
