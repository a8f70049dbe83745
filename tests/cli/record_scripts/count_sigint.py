"""A stand-in for a recorded command in the signal tests (no torch): counts
the SIGINTs it receives and, unless given --no-ack, acknowledges each on
MEMSCOPE_SIGNAL_ACK_FD the way memscope's hook does (Python's signal wakeup
fd). With --self-first it sends itself one SIGINT before it is ready (a
byte that must not count for a later signal). Prints "ready" once its
handler is in, then "sigint N" after 1 s without a signal (10 s at most for
the first)."""
import os
import signal
import sys
import time

count = 0
last = None


def on_sigint(signum, frame):
    global count, last
    count += 1
    last = time.monotonic()


signal.signal(signal.SIGINT, on_sigint)
if "--no-ack" not in sys.argv:
    signal.set_wakeup_fd(int(os.environ["MEMSCOPE_SIGNAL_ACK_FD"]))
if "--self-first" in sys.argv:
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(0.4)  # well past the relay's window for early bytes
# Before "ready": the test's signal may come the moment it is printed.
last = None  # the quiet is timed from the test's signal
started = time.monotonic()
print("ready", flush=True)
while True:
    now = time.monotonic()
    if last is not None and now - last >= 1.0:
        break
    if last is None and now - started >= 10.0:
        break
    time.sleep(0.02)
print("sigint", count, flush=True)
