"""record --apply's plan ("memscope-apply/1", core's apply_plan.h) as the
hook reads it: everything checked before anything is applied, a plan that
is wrong refused with what is wrong. Pure Python, no torch import
(tests/pyhook/test_apply.py)."""
import json
import os
import re
import stat

FORMAT = "memscope-apply/1"
MAX_PLAN_BYTES = 1 << 20
MAX_MODULES = 100000
MAX_TEXT = 4096
MAX_SEGMENTS = 100000
_OP = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*")


class PlanError(Exception):
    pass


class Module:
    __slots__ = ("root", "path", "type", "save")

    def __init__(self, root, path, type_, save=()):
        self.root, self.path, self.type, self.save = root, path, type_, tuple(save)

    def name(self):
        return "%s:%s" % (self.root, self.path)


class Plan:
    def __init__(self, policy, use_reentrant=False, optimizer_in_backward=False,
                 checkpoint=(), sequential=None, segments=0):
        self.policy = policy
        self.use_reentrant = use_reentrant
        self.optimizer_in_backward = optimizer_in_backward
        self.checkpoint = list(checkpoint)   # [Module]
        self.sequential = sequential         # Module or None
        self.segments = segments

    def roots(self):
        out = {m.root for m in self.checkpoint}
        if self.sequential is not None:
            out.add(self.sequential.root)
        return out

    def modules_of(self, root):
        return [m for m in self.checkpoint if m.root == root]


def _text(obj, key, where, allow_empty=False):
    value = obj.get(key)
    if not isinstance(value, str):
        raise PlanError("%s: \"%s\" is not a string" % (where, key))
    if (not value and not allow_empty) or len(value) > MAX_TEXT or "\x00" in value:
        raise PlanError("%s: \"%s\" is empty or longer than %d characters"
                        % (where, key, MAX_TEXT))
    return value


def _flag(obj, key):
    value = obj.get(key, False)
    if not isinstance(value, bool):
        raise PlanError("\"%s\" is not true or false" % key)
    return value


def _module(obj, where):
    if not isinstance(obj, dict):
        raise PlanError("%s is not an object" % where)
    path = _text(obj, "path", where)
    # The root itself cannot be swapped before its own first call runs.
    if path.startswith(".") or path.endswith(".") or ".." in path:
        raise PlanError("%s: path %r is not a module's qualified name" % (where, path))
    return Module(_text(obj, "root", where), path, _text(obj, "type", where, allow_empty=True))


def parse_plan(text):
    """The plan in `text` (the JSON record wrote), or PlanError saying what
    is wrong: everything is checked before anything is applied."""
    try:
        doc = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise PlanError("not valid JSON (%s)" % exc)
    if not isinstance(doc, dict):
        raise PlanError("not a JSON object")
    if doc.get("format") != FORMAT:
        raise PlanError("format %r is not %s" % (doc.get("format"), FORMAT))
    policy = _text(doc, "policy", "the plan")
    items = doc.get("checkpoint", [])
    if not isinstance(items, list) or len(items) > MAX_MODULES:
        raise PlanError("\"checkpoint\" is not a list of at most %d modules" % MAX_MODULES)
    modules, seen = [], set()
    for i, item in enumerate(items):
        where = "checkpoint[%d]" % i
        m = _module(item, where)
        save = item.get("save", [])
        if not isinstance(save, list) or len(save) > 1000:
            raise PlanError("%s: \"save\" is not a list of ops" % where)
        for op in save:
            if not isinstance(op, str) or len(op) > 256 or not _OP.fullmatch(op):
                raise PlanError("%s: %r is not an op as PyTorch names it (aten::mm)"
                                % (where, op))
        m.save = tuple(dict.fromkeys(save))
        if (m.root, m.path) in seen:
            raise PlanError("%s: %s is named twice" % (where, m.name()))
        seen.add((m.root, m.path))
        modules.append(m)
    sequential, segments = None, 0
    seq = doc.get("sequential")
    if seq is not None:
        sequential = _module(seq, "sequential")
        segments = seq.get("segments")
        if type(segments) is not int or not 1 <= segments <= MAX_SEGMENTS:
            raise PlanError("sequential: \"segments\" is not a number from 1 to %d"
                            % MAX_SEGMENTS)
        if any(m.root == sequential.root and (m.path == sequential.path
                                              or m.path.startswith(sequential.path + "."))
               for m in modules):
            raise PlanError("sequential: %s holds modules checkpointed on their own too"
                            % sequential.name())
    plan = Plan(policy, _flag(doc, "use_reentrant"), _flag(doc, "optimizer_in_backward"),
                modules, sequential, segments)
    if not modules and sequential is None and not plan.optimizer_in_backward:
        raise PlanError("it applies nothing (no module, no sequential, no opt-in-bwd)")
    return plan


def read_plan(path):
    """The plan at `path`: a regular file (never through a symlink) of at
    most MAX_PLAN_BYTES; PlanError otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as exc:
        raise PlanError("cannot open %s (%s)" % (path, exc.strerror or exc))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise PlanError("%s is not a regular file" % path)
        data = os.read(fd, MAX_PLAN_BYTES + 1)
    finally:
        os.close(fd)
    if len(data) > MAX_PLAN_BYTES:
        raise PlanError("%s is larger than %d bytes" % (path, MAX_PLAN_BYTES))
    try:
        return parse_plan(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise PlanError("%s is not UTF-8" % path)
