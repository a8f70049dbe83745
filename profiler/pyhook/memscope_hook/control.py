"""The control socket of an attachable process (`record --idle`,
memscope.attachable()): `memscope-cli attach`, `detach` and `top` talk to it.

One Unix stream socket per process, `<folder>/<pid>.sock`, where <folder> is
$XDG_RUNTIME_DIR/memscope, else <output folder>/.memscope-control: a folder
made 0700 and used only if this user owns it and nobody else may enter it.
The socket itself is 0600. Nothing listens on the network.

The protocol (docs/HOOK_FORMAT.md): one request per connection, one JSON
object on one line of at most MAX_LINE bytes; one JSON line back, always an
object with "ok". A peer of another uid (SO_PEERCRED), a line too long, not
JSON, not an object, an unknown command or key, or a value of the wrong type
or range is answered {"ok": false, "error": ...} and nothing is done.
"""
import json
import os
import re
import socket
import stat
import struct
import threading

MAX_LINE = 4096
READ_TIMEOUT_S = 2.0
DRAIN_BYTES = 1 << 20
SOCKET_SUFFIX = ".sock"
FOLDER_NAME = ".memscope-control"

# command -> {key: checker}; a checker returns the value or raises ValueError.
WINDOW_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def _window_id(v):
    if not isinstance(v, str) or not WINDOW_ID.match(v) or ".." in v:
        raise ValueError("window must be 1-64 letters, digits, '_', '-', '.'")
    return v


def _steps(v):
    if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= 1000000:
        raise ValueError("steps must be a whole number from 1 to 1000000")
    return v


def _from_step(v):
    if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= 2**31 - 1:
        raise ValueError("from_step must be a step number from 0 to 2147483647")
    return v


def _seconds(v):
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 < v <= 7 * 86400:
        raise ValueError("seconds must be a number above 0, at most a week")
    return float(v)


def _bool(v):
    if not isinstance(v, bool):
        raise ValueError("categories must be true or false")
    return v


COMMANDS = {
    "status": {"categories": _bool},
    "start": {"window": _window_id, "steps": _steps, "seconds": _seconds,
              "from_step": _from_step},
    "stop": {},
}
REQUIRED = {"start": ("window",)}


def _no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise ValueError("a key given twice")
    return dict(pairs)


def parse_request(line):
    """(command, arguments) from one request line (bytes, no newline), or
    raises ValueError saying why it is refused."""
    if len(line) > MAX_LINE:
        raise ValueError("request longer than %d bytes" % MAX_LINE)
    try:
        request = json.loads(line.decode("utf-8"), object_pairs_hook=_no_duplicates)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise ValueError("request is not one JSON object on one line")
    if not isinstance(request, dict):
        raise ValueError("request is not a JSON object")
    cmd = request.get("cmd")
    if not isinstance(cmd, str) or cmd not in COMMANDS:
        raise ValueError("unknown command (allowed: %s)" % ", ".join(sorted(COMMANDS)))
    allowed = COMMANDS[cmd]
    args = {}
    for key, value in request.items():
        if key == "cmd":
            continue
        if key not in allowed:
            raise ValueError("%s takes no %r" % (cmd, key[:40] if isinstance(key, str) else key))
        args[key] = allowed[key](value)
    for key in REQUIRED.get(cmd, ()):
        if key not in args:
            raise ValueError("%s needs %r" % (cmd, key))
    if cmd == "start" and "steps" in args and "seconds" in args:
        raise ValueError("start takes steps or seconds, not both")
    if cmd == "start" and "from_step" in args and "steps" not in args:
        raise ValueError("from_step goes with steps (the first step of a steps window)")
    return cmd, args


def _private_folder(folder):
    """Make `folder` 0700 if missing; True if it is a folder of this user that
    no one else may enter (not a link)."""
    try:
        os.makedirs(os.path.dirname(folder), exist_ok=True)
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        return False
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return (stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid()
            and (st.st_mode & 0o077) == 0)


def socket_folders(output_dir, env=None):
    """Where sockets may be, in the order they are tried."""
    env = os.environ if env is None else env
    out = []
    xdg = env.get("XDG_RUNTIME_DIR", "")
    if xdg and os.path.isabs(xdg):
        out.append(os.path.join(xdg, "memscope"))
    if output_dir:
        out.append(os.path.join(output_dir, FOLDER_NAME))
    return out


def peer_uid(conn):
    creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return struct.unpack("3i", creds)[1]


class ControlServer:
    """Serves requests on a daemon thread; handler(cmd, args) -> dict."""

    def __init__(self, output_dir, pid, handler, warn):
        self._output_dir = output_dir
        self._pid = pid
        self._handler = handler
        self._warn = warn
        self._sock = None
        self.path = None

    def start(self):
        reasons = []
        for folder in socket_folders(self._output_dir):
            if not _private_folder(folder):
                reasons.append("%s is not a private folder of this user" % folder)
                continue
            path = os.path.join(folder, "%d%s" % (self._pid, SOCKET_SUFFIX))
            if len(os.fsencode(path)) >= 104:
                reasons.append("%s is too long for a Unix socket" % path)
                continue
            try:
                _remove_stale(path)
                sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
                old = os.umask(0o177)
                try:
                    sock.bind(path)
                finally:
                    os.umask(old)
                os.chmod(path, 0o600)
                sock.listen(8)
            except OSError as exc:
                reasons.append("%s: %s" % (path, exc))
                continue
            sock.set_inheritable(False)
            self._sock = sock
            self.path = path
            thread = threading.Thread(target=self._serve, name="memscope-control", daemon=True)
            thread.start()
            return True
        self._warn("not attachable: no control socket (%s)" % "; ".join(reasons))
        return False

    def close(self):
        """At exit: the socket file goes (only the process that made it)."""
        if self._sock is None or os.getpid() != self._pid:
            return
        try:
            os.unlink(self.path)
            if os.path.basename(os.path.dirname(self.path)) == FOLDER_NAME:
                os.rmdir(os.path.dirname(self.path))  # the output folder's, once empty
        except OSError:
            pass

    def forget(self):
        """A forked child: the listening socket is the parent's."""
        self._sock = None
        self.path = None

    def _serve(self):
        from . import signals
        signals.block_in_this_thread()
        sock = self._sock
        while sock is not None and self._sock is sock:
            try:
                conn, _ = sock.accept()
            except OSError:
                if self._sock is not sock:
                    return
                continue
            try:
                with conn:
                    self._answer(conn)
            except Exception:
                pass

    def _answer(self, conn):
        if peer_uid(conn) != os.getuid():
            _send(conn, {"ok": False, "error": "refused: the peer runs as another user"})
            return
        conn.settimeout(READ_TIMEOUT_S)
        data = b""
        while b"\n" not in data and len(data) <= MAX_LINE:
            try:
                chunk = conn.recv(MAX_LINE + 1 - len(data) if len(data) <= MAX_LINE else 1)
            except socket.timeout:
                _send(conn, {"ok": False, "error": "refused: no complete request line in time"})
                return
            if not chunk:
                break
            data += chunk
        line = data.split(b"\n", 1)[0]
        if len(line) > MAX_LINE or (b"\n" not in data and len(data) > MAX_LINE):
            _send(conn, {"ok": False, "error": "refused: request longer than %d bytes"
                         % MAX_LINE})
            _drain(conn)
            return
        try:
            cmd, args = parse_request(line)
        except ValueError as exc:
            _send(conn, {"ok": False, "error": "refused: %s" % exc})
            return
        try:
            reply = self._handler(cmd, args)
        except Exception as exc:
            reply = {"ok": False, "error": "%s failed: %s: %s" % (cmd, type(exc).__name__, exc)}
        _send(conn, reply)


def _send(conn, obj):
    try:
        conn.sendall((json.dumps(obj, separators=(",", ":")) + "\n").encode())
    except OSError:
        pass


def _drain(conn):
    """After refusing a request that is too long: what the peer still sends
    is read and dropped (at most DRAIN_BYTES, within the read timeout), so
    that its write completes and it can read the refusal instead of a broken
    pipe."""
    try:
        conn.shutdown(socket.SHUT_WR)
        left = DRAIN_BYTES
        while left > 0:
            chunk = conn.recv(min(65536, left))
            if not chunk:
                return
            left -= len(chunk)
    except OSError:
        pass


def _remove_stale(path):
    """A socket left by a process that died (same pid reused, or a crash):
    removed if it is a socket nobody answers on. Anything else is left."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode) or st.st_uid != os.getuid():
        raise OSError("%s exists and is not a stale socket of this user" % path)
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(path)
    except OSError:
        os.unlink(path)
        return
    finally:
        probe.close()
    raise OSError("%s is in use by another process" % path)
