"""SIGTERM and SIGINT: write the history and hook.json before the process goes.

SIGTERM (schedulers, torchrun) skips atexit, so the handler finishes the
recording itself, then hands the signal on: to the previous Python handler if
there was one, else by restoring the default and re-sending it, so the process
still dies of SIGTERM. SIGINT only chains: Python's default raises
KeyboardInterrupt and atexit does the rest. An ignored signal stays ignored.

Nothing the signal path writes can be broken by a second signal: the phases
are already in the append-only log, and the final writes run with SIGINT and
SIGTERM blocked (deferred(), on the main thread), so a second Ctrl-C lands
after them.

`memscope-cli record` passes a pipe (MEMSCOPE_SIGNAL_ACK_FD): it becomes
Python's signal wakeup fd, so each signal this process receives writes its
number there from C at once, and `record` does not send again a signal the
process already got (from the terminal or a kill of its process group).
"""
import contextlib
import os
import signal
import threading

_BLOCKED = (signal.SIGINT, signal.SIGTERM)


def install(finish, note_exit, warn, ack_fd=-1):
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
    _acknowledge_to(ack_fd, warn)
    return installed


def _acknowledge_to(fd, warn):
    if fd < 0:
        return
    try:
        os.fstat(fd)
        os.set_blocking(fd, False)  # set_wakeup_fd requires it
        previous = signal.set_wakeup_fd(fd, warn_on_full_buffer=False)
        if previous != -1:
            # The program (or a library) has its own: leave it.
            signal.set_wakeup_fd(previous)
    except (OSError, ValueError) as exc:
        warn("signal acknowledgement to memscope-cli record not set up (%s); a signal sent to "
             "the whole process group may reach the program twice" % exc)


@contextlib.contextmanager
def deferred():
    """SIGINT and SIGTERM wait until the block ends (main thread only; a
    no-op elsewhere or where pthread_sigmask is missing)."""
    blocked = False
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "pthread_sigmask"):
        try:
            old = signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
            blocked = True
        except (OSError, ValueError):
            pass
    try:
        yield
    finally:
        if blocked:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


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
