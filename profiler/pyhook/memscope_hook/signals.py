"""SIGTERM and SIGINT: write the history and hook.json before the process goes.

SIGTERM (schedulers, torchrun) skips atexit, so the handler finishes the
recording itself, then hands the signal on: to the previous Python handler if
there was one, else by restoring the default and re-sending it, so the process
still dies of SIGTERM. SIGINT only chains: Python's default raises
KeyboardInterrupt and atexit does the rest. An ignored signal stays ignored.
"""
import os
import signal
import threading


def install(finish, note_exit, warn):
    """finish(exit) writes everything; note_exit(exit) only records the reason."""
    if threading.current_thread() is not threading.main_thread():
        warn("signal handlers not installed: torch was first imported off the main thread")
        return []
    installed = []
    for signum, name, final in ((signal.SIGTERM, "SIGTERM", True), (signal.SIGINT, "SIGINT", False)):
        try:
            previous = signal.getsignal(signum)
            if previous is None or previous == signal.SIG_IGN:
                continue  # set from C (cannot chain) or ignored on purpose
            signal.signal(signum, _handler(signum, name, final, previous, finish, note_exit))
            installed.append(name)
        except (ValueError, OSError) as exc:
            warn("%s handler not installed: %s" % (name, exc))
    return installed


def _handler(signum, name, final, previous, finish, note_exit):
    def handler(received, frame):
        python_handler = callable(previous)
        try:
            if final or not python_handler:
                finish(name)
            else:
                note_exit(name)
        except Exception:
            pass
        if python_handler:
            return previous(received, frame)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    return handler
