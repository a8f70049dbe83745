"""Module scopes: which module ran when (where in the model memory was taken).

Pure Python with no torch import, so it can be unit-tested on its own. The
global module forward hooks call pre(module, recompute) / post(module) for
every module call; each call of a module at most `depth` levels deep becomes
one scope (start_ns, end_ns, module id, kind). Modules are interned once: the
log gets one "module" record per module, then compact "module_scopes"
batches (log.jsonl; docs/HOOK_FORMAT.md has the schema).

A module's path is its qualified name under the outermost module of the call
(the root, called with no module running in this thread), as
`root.named_modules()` names it; the map id(module) -> name is built once per
root. A module that is not in it (made during forward, or added after the
map was built and still missing after a few rebuilds) is named after its
parent and its class ("blocks.0.Dropout"). Roots are labelled with their
class name; two roots of the same class alive at once get "#2", "#3".

Costs on the hot path (every module call): one thread-local stack push/pop,
one clock read each side and one dict lookup; modules deeper than `depth`
push a placeholder and read no clock. Scopes go to a deque (thread-safe
append without a lock), drained by the session's flush.
"""
import collections
import threading
import weakref

# core's ModuleScopeKind values (module_scopes.h): stored on disk.
FORWARD = 0
RECOMPUTE = 1
BACKWARD = 2

DEFAULT_DEPTH = 6
MAX_PATH_BYTES = 4096      # core's kMaxModulePathBytes: longer paths are cut with "…"
MAX_MODULES = 1000000      # interned modules; beyond, calls are not recorded
MAX_ROOTS = 1024           # roots alive at once; beyond, their calls are not recorded
BATCH = 4096               # scopes per log record
_REBUILDS = 8              # named_modules() walks per root after the first
_MAX_STACK = 10000         # a stack this deep is left over from forwards that raised
_ELLIPSIS = "\u2026"


def clamp_text(text):
    """`text` cut to MAX_PATH_BYTES of UTF-8 (with "…"), as core cuts it."""
    if len(text) * 4 <= MAX_PATH_BYTES:
        return text
    data = text.encode("utf-8", "replace")
    if len(data) <= MAX_PATH_BYTES:
        return text
    return data[:MAX_PATH_BYTES - 3].decode("utf-8", "ignore") + _ELLIPSIS


def _class_name(module):
    return type(module).__name__


class _Root:
    __slots__ = ("ref", "label", "names", "ids", "rebuilds", "__weakref__")

    def __init__(self, module, label):
        self.ref = weakref.ref(module)
        self.label = label
        self.names = {}      # id(module) -> path, from named_modules()
        self.ids = {}        # id(module) -> interned module id (0: not recorded)
        self.rebuilds = 0
        self.build(module)

    def build(self, module):
        names = {id(module): ""}
        # torch.compile's wrapper (OptimizedModule) holds the model as
        # _orig_mod: its modules are named as the model's own.
        target = getattr(module, "_orig_mod", None)
        if target is None or not hasattr(target, "named_modules"):
            target = module
        for name, m in target.named_modules():
            names.setdefault(id(m), name)
        self.names = names


def _root_class(module):
    target = getattr(module, "_orig_mod", None)
    return _class_name(target if target is not None and hasattr(target, "named_modules")
                       else module)


class ModuleRecorder:
    """depth: the number of module levels recorded (the root is level 1);
    0 records nothing. clock: ns on the phases' clock."""

    def __init__(self, depth=DEFAULT_DEPTH, clock=None):
        import time
        self.depth = max(0, int(depth))
        self._clock = clock or time.time_ns
        self._lock = threading.RLock()   # the slow paths (new roots, new modules)
        self.compile_seen = False
        # Called with (module, label) when a new root is labelled: record
        # --apply wraps the plan's modules there (apply.py).
        self.on_new_root = None
        self.reset()

    def after_fork(self):
        """A forked child logs to a file of its own: every module is new there."""
        self._lock = threading.RLock()
        self.reset()

    def reset(self):
        with self._lock:
            self._tls = threading.local()
            self._out = collections.deque()   # module records (dict) and scopes (tuple)
            self._keys = {}        # (root label, path) -> module id
            self._paths = [None]   # module id -> path
            self._transient = {}   # (parent id, class) -> module id
            self._roots = {}       # id(module called at depth 0) -> (weakref to it, _Root)
            self._named = {}       # id(module) -> module id, for the backward hooks
            self._level = {}       # module id -> the call level it was first seen at (root: 0)
            self._labels = {}      # root label -> _Root (weakly: a dropped model frees it)
            self.modules = 0
            self.dropped_modules = 0   # not interned: MAX_MODULES reached
            self.dropped_roots = 0     # roots not recorded: MAX_ROOTS alive
            self.scopes = 0

    # ------------------------------------------------------------------ hooks
    def _stack(self):
        try:
            return self._tls.stack
        except AttributeError:
            self._tls.stack = stack = []
            return stack

    def pre(self, module, recompute=False):
        """A module's forward is about to run (inside backward: recompute).

        Stack entries: (module, start_ns, module id, kind, root, levels left
        below it); id 0 = not recorded."""
        try:
            stack = self._tls.stack
        except AttributeError:
            stack = self._stack()
        if stack:
            if stack[0][0] is not module and len(stack) <= _MAX_STACK:
                top = stack[-1]
                left = top[5] - 1
                if left <= 0:
                    stack.append((module, 0, 0, 0, None, 0))  # deeper than the limit
                    return
                root = top[4]
                mid = 0 if root is None else root.ids.get(id(module))
                if mid is None:
                    mid = self._intern_in(root, module, top[2], self.depth - left)
                stack.append((module, self._clock() if mid else 0, mid,
                              RECOMPUTE if recompute else FORWARD, root, left))
                return
            # The root again with a stack left over: a forward raised out of
            # it and the loop caught the error (PyTorch before 2.1 runs no
            # post hook then). Start over.
            del stack[:]
        if not self.depth:
            return
        hit = self._roots.get(id(module))
        root = hit[1] if hit is not None and hit[0]() is module else self._new_root(module)
        mid = 0 if root is None else root.ids.get(id(module))
        if mid is None:
            mid = self._intern_in(root, module, 0, 0)
        # A part of a model called with no module running (a checkpointed
        # block recomputed in backward, model.head(x)) keeps the level its
        # forward ran at, so the limit cuts at the same modules.
        left = self.depth - self._level.get(mid, 0)
        if left <= 0:
            stack.append((module, 0, 0, 0, None, 0))
            return
        stack.append((module, self._clock() if mid else 0, mid,
                      RECOMPUTE if recompute else FORWARD, root, left))

    def post(self, module):
        """A module's forward returned."""
        try:
            stack = self._tls.stack
        except AttributeError:
            return
        if not stack:
            return
        entry = stack.pop()
        if entry[0] is not module:
            # Inner forwards raised and this one caught the error (before
            # 2.1 their post hooks never ran): drop them.
            i = len(stack) - 1
            while i >= 0 and stack[i][0] is not module:
                i -= 1
            if i < 0:
                stack.append(entry)  # a post whose pre we never saw
                return
            entry = stack[i]
            del stack[i:]
        if entry[2]:
            self._out.append((entry[1], self._clock(), entry[2], entry[3]))

    # Backward scopes (PyTorch 2.0+ global full backward hooks), per thread:
    # the autograd engine runs them on its own threads.
    def backward_pre(self, module):
        mid = self._known(module)
        try:
            stack = self._tls.bstack
        except AttributeError:
            stack = self._tls.bstack = []
        stack.append((module, self._clock() if mid else 0, mid))

    def backward_post(self, module):
        try:
            stack = self._tls.bstack
        except AttributeError:
            return
        i = len(stack) - 1
        while i >= 0 and stack[i][0] is not module:
            i -= 1
        if i < 0:
            return
        entry = stack[i]
        del stack[i:]
        if entry[2]:
            self._out.append((entry[1], self._clock(), entry[2], BACKWARD))

    def _known(self, module):
        """The module's id if a forward of it was recorded (0 otherwise)."""
        return self._named.get(id(module), 0)

    # ------------------------------------------------------------ slow paths
    def _new_root(self, module):
        """A module called with no module running: the root of its own model,
        or a part of a known one called on its own (model.lm_head(x))."""
        with self._lock:
            key = id(module)
            dead = [k for k, (ref, _) in self._roots.items() if ref() is None]
            for k in dead:
                del self._roots[k]
            roots = {id(r): r for _, r in self._roots.values()}
            for root in roots.values():
                if key in root.names and root.ref() is not None:
                    self._roots[key] = (weakref.ref(module), root)
                    return root
            if len(roots) >= MAX_ROOTS:
                self.dropped_roots += 1
                return None
            cls = clamp_text(_root_class(module))
            label, n = cls, 1
            while True:
                other = self._labels.get(label)
                if other is None or other.ref() is None:
                    break
                n += 1
                label = "%s#%d" % (cls, n)
            try:
                root = _Root(module, label)
            except Exception:
                # named_modules() failed (a broken module): the root alone.
                root = _Root.__new__(_Root)
                root.ref, root.label, root.names, root.ids, root.rebuilds = (
                    weakref.ref(module), label, {key: ""}, {}, _REBUILDS)
            self._labels[label] = root
            self._roots[key] = (weakref.ref(module), root)
            if self.on_new_root is not None:
                try:
                    self.on_new_root(module, label)
                except Exception:
                    pass    # apply.py says what failed itself
            return root

    def _intern_in(self, root, module, parent, level):
        """The id of `module` under `root` (its parent's id `parent`), interned
        on first sight; cached by id(module) when named_modules() names it."""
        with self._lock:
            key = id(module)
            path = root.names.get(key)
            if path is None and root.rebuilds < _REBUILDS:
                # Added after the map was built (a lazily built model)?
                root.rebuilds += 1
                owner = root.ref()
                if owner is not None:
                    try:
                        root.build(owner)
                    except Exception:
                        root.rebuilds = _REBUILDS
                    path = root.names.get(key)
            cls = _class_name(module)
            if path is not None:
                mid = self._intern(root.label, path, cls)
                root.ids[key] = mid
                if mid:
                    self._named[key] = mid
                    self._level.setdefault(mid, level)
                return mid
            # Not one of the root's modules (made inside forward): named after
            # its parent, one id per (parent, class).
            tkey = (parent, cls)
            mid = self._transient.get(tkey)
            if mid is None:
                base = self._paths[parent] if 0 < parent < len(self._paths) else ""
                mid = self._intern(root.label, (base + "." + cls) if base else cls, cls)
                self._transient[tkey] = mid
                if mid:
                    self._level.setdefault(mid, level)
            return mid

    def _intern(self, label, path, cls):
        path = clamp_text(path)
        key = (label, path)
        mid = self._keys.get(key)
        if mid is not None:
            return mid
        if self.modules >= MAX_MODULES:
            self.dropped_modules += 1
            return 0
        self.modules += 1
        mid = self.modules
        self._keys[key] = mid
        self._paths.append(path)
        self._out.append({"t": "module", "id": mid, "root": label, "path": path,
                          "class": clamp_text(cls)})
        return mid

    # ----------------------------------------------------------------- output
    def drain(self):
        """Log records for what was recorded since the last drain: the new
        modules first, then the scopes in batches of at most BATCH:
        {"t": "module_scopes", "base_ns": B, "s": [start - B, end - start,
        id, kind, ...]}."""
        modules, scopes = split_queue(self._out)
        self.scopes += len(scopes)
        return modules + batches(scopes)

    def open_scopes(self, now=None):
        """The calling thread's scopes still open, closed at `now`, as
        [start, end, id, kind] (hook.json's final write)."""
        if now is None:
            now = self._clock()
        out = []
        for entry in list(getattr(self._tls, "stack", ())):
            if entry[2]:
                out.append([entry[1], max(now, entry[1]), entry[2], entry[3]])
        return out

    def describe(self, backward):
        """hook.json's "modules"."""
        return {"depth": self.depth, "modules": self.modules, "scopes": self.scopes,
                "backward": backward,
                "compile": ("seen: modules inside torch.compile'd code may run without their "
                            "hooks, so their scopes may be missing") if self.compile_seen else None,
                "dropped_modules": self.dropped_modules, "dropped_roots": self.dropped_roots}


def split_queue(out):
    """Empties the deque `out` of what was queued so far (other threads may
    append meanwhile): its dict records (names) and its scope tuples, each
    in order."""
    records, scopes = [], []
    popleft = out.popleft
    for _ in range(len(out)):
        item = popleft()
        if type(item) is dict:
            records.append(item)
        else:
            scopes.append(item)
    return records, scopes


def batches(scopes, record="module_scopes"):
    """[(start, end, id, kind or depth)] as compact log records of type `record`."""
    out = []
    for first in range(0, len(scopes), BATCH):
        chunk = scopes[first:first + BATCH]
        base = min(s[0] for s in chunk)
        flat = []
        for start, end, mid, kind in chunk:
            flat += (start - base, max(0, end - start), mid, kind)
        out.append({"t": record, "base_ns": base, "s": flat})
    return out
