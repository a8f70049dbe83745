"""SIGTERM and SIGINT: write the history and hook.json before the process goes.

SIGTERM (schedulers, torchrun) skips atexit, so the handler finishes the
recording itself, then hands the signal on: to the previous Python handler if
there was one, else by restoring the default and re-sending it, so the process
still dies of SIGTERM. SIGINT only chains: Python's default raises
KeyboardInterrupt and atexit does the rest. An ignored signal stays ignored.

Nothing the signal path writes can be broken by a second signal: the phases
are already in the append-only log, and a SIGINT or SIGTERM that arrives
during the final writes takes effect after them (deferred()), so a second
Ctrl-C lands after them.

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
    """SIGINT and SIGTERM that arrive inside the block take effect after it.

    Blocking them with pthread_sigmask is not enough: it blocks them for the
    calling thread only, and the kernel hands a process signal to any thread
    that does not block it (torch's pools, the flusher), whose C handler then
    makes the main thread run the Python handler mid-write. Python handlers
    always run on the main thread, so they are swapped for one that only notes
    the signal, and what was noted is sent again afterwards. A no-op off the
    main thread (signal.signal is refused there)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted = []
    saved = {}
    for signum in _BLOCKED:
        try:
            previous = signal.getsignal(signum)
            if previous is None or previous == signal.SIG_IGN:
                continue
            signal.signal(signum, lambda received, frame: noted.append(received))
            saved[signum] = previous
        except (OSError, ValueError):
            pass
    try:
        yield
    finally:
        for signum, previous in saved.items():
            try:
                signal.signal(signum, previous)
            except (OSError, ValueError):
                pass
        for signum in dict.fromkeys(noted):
            os.kill(os.getpid(), signum)


def block_in_this_thread():
    """For memscope's own threads: signals go to the program's threads."""
    if hasattr(signal, "pthread_sigmask"):
        try:
            signal.pthread_sigmask(signal.SIG_BLOCK, _BLOCKED)
        except (OSError, ValueError):
            pass


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
