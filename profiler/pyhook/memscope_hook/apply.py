"""record --apply POLICY: the job runs with a checkpointing policy applied,
without a change to its script (docs/HOOK_FORMAT.md, "Apply plan").

`memscope-cli record` resolves the policy onto the modules a recording of the
job names (core's policy_modules.h) and writes the plan
("memscope-apply/1", apply_plan.h); MEMSCOPE_APPLY is its path. Here:

- each module the plan names is found with root.get_submodule(path) at the
  first forward of its root (the root labelled as modules.py labels it), and
  its class is swapped for a subclass of the same name whose __call__ runs
  the original call under torch.utils.checkpoint.checkpoint, so that its
  hooks (memscope's module scopes among them) run in the recompute as they
  do when a script checkpoints `block(x)` itself. Only in training with grad
  enabled; eval and no_grad forwards run plain;
- save lists: PyTorch 2.4+'s selective checkpoint (MUST_SAVE for the listed
  ops), else memscope's rebuild of it (a TorchDispatchMode caches the listed
  ops' outputs in forward and returns them in the recompute);
- sequential: the container's forward becomes checkpoint_sequential;
- opt-in-bwd: the optimizer step is fused into backward (one optimizer of the
  job's class per parameter, stepped by a hook as soon as its gradient is
  accumulated); the job's own step() and zero_grad() do nothing for them.

What cannot be applied exactly is refused: `memscope: --apply POLICY refused:
WHY` on stderr, once, hook.json's "apply" says so, what was put in place is
undone where it can be, and the job goes on as it was written. A policy is
never shown as applied when it was not.

The plan's reading and the bookkeeping are pure Python (no torch import), so
they are unit-tested on their own (tests/pyhook/test_apply.py).
"""
import functools
import json
import os
import re
import stat
import sys
import threading

FORMAT = "memscope-apply/1"
MAX_PLAN_BYTES = 1 << 20
MAX_MODULES = 100000
MAX_TEXT = 4096
MAX_SEGMENTS = 100000
_OP = re.compile(r"[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_.]*")

SAVE_LISTS_API = "selective-checkpoint-api"
SAVE_LISTS_OURS = "memscope-dispatch-cache"


# The instance attribute holding a wrapped module's own __call__.
_CALL = "_memscope_apply_call"


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


class Outcome:
    """What became of the plan: hook.json's "apply" (torch-free)."""

    def __init__(self, policy, stream=None):
        self.policy = policy
        self.refused = None
        self.checkpointed = []       # "ROOT:PATH" wrapped
        self.sequential = None       # "ROOT:PATH"
        self.save_lists = None       # SAVE_LISTS_API | SAVE_LISTS_OURS
        self.optimizer = None        # how the step was fused
        self.wanted = []             # parts of the plan: "checkpoint", "sequential", "optimizer"
        self._stream = stream
        self._undo = []
        self._lock = threading.Lock()
        self.child = False           # a forked child: says nothing

    def add_undo(self, fn):
        self._undo.append(fn)

    def refuse(self, why):
        """Refused, once: said on stderr, what was put in place undone."""
        with self._lock:
            if self.refused is not None:
                return
            self.refused = why
            undo, self._undo = self._undo, []
        try:
            (self._stream or sys.stderr).write("memscope: --apply %s refused: %s\n"
                                               % (self.policy, why))
        except Exception:
            pass
        for fn in reversed(undo):
            try:
                fn()
            except Exception:
                pass

    def applied(self):
        if self.refused is not None:
            return False
        done = {"checkpoint": bool(self.checkpointed), "sequential": self.sequential is not None,
                "optimizer": self.optimizer is not None}
        return bool(self.wanted) and all(done[w] for w in self.wanted)

    def unused(self):
        """Why, when neither applied nor refused (a process that never ran the model)."""
        if self.refused is not None or self.applied():
            return None
        missing = []
        if "checkpoint" in self.wanted and not self.checkpointed:
            missing.append("no training forward of the plan's model ran")
        if "sequential" in self.wanted and self.sequential is None:
            missing.append("the sequential container never ran")
        if "optimizer" in self.wanted and self.optimizer is None:
            missing.append("no torch.optim optimizer was built")
        return "; ".join(dict.fromkeys(missing)) or "nothing was applied"

    def document(self):
        if self.child:
            return None
        return {"policy": self.policy, "applied": self.applied(), "refused": self.refused,
                "unused": self.unused(), "save_lists": self.save_lists,
                "optimizer_in_backward": self.optimizer,
                "checkpointed": list(self.checkpointed), "sequential": self.sequential}


def root_paths(root, limit=40):
    """The qualified names a root has, for a message (the first `limit`)."""
    try:
        names = [n for n, _ in root.named_modules() if n]
    except Exception:
        return "?"
    more = len(names) - limit
    return ", ".join(names[:limit]) + (" and %d more" % more if more > 0 else "")


# ------------------------------------------------------------------ torch parts
def _op_name(func):
    try:
        return func._schema.name
    except Exception:
        return str(getattr(func, "overloadpacket", func))


class Applier:
    """Puts a plan in place in a process with torch (Session.install)."""

    def __init__(self, torch, plan, outcome, modules):
        self.torch = torch
        self.plan = plan
        self.outcome = outcome
        self.modules = modules       # modules.ModuleRecorder: labels roots
        self._classes = {}           # (original class, kind) -> swapped subclass
        self._fused = {}             # id(param) -> (per-parameter optimizer, user's group)
        self._fusing = False         # building the per-parameter optimizers
        self._hooks = []             # AccumulateGrad nodes / hook handles kept alive
        self._done_roots = set()

    # ----------------------------------------------------------------- install
    def install(self):
        if self.plan.checkpoint:
            self.outcome.wanted.append("checkpoint")
        if self.plan.sequential is not None:
            self.outcome.wanted.append("sequential")
        if self.plan.optimizer_in_backward:
            self.outcome.wanted.append("optimizer")
        if self.plan.checkpoint or self.plan.sequential is not None:
            if self.modules is None or self.modules.depth <= 0:
                self.outcome.refuse("it needs the module hooks that label roots, which are off "
                                    "(record --module-depth 0 or --idle)")
                return
            self.modules.on_new_root = self._root_seen
        if self.plan.optimizer_in_backward:
            self._watch_optimizers()
            self._watch_clipping()

    # ------------------------------------------------------------- checkpoint
    def _root_seen(self, module, label):
        """modules.py made a new root (its first call): wrap what the plan
        names under it."""
        if self.outcome.refused is not None or label in self._done_roots:
            return
        wanted = self.plan.modules_of(label)
        seq = self.plan.sequential
        if seq is not None and seq.root != label:
            seq = None
        if not wanted and seq is None:
            return
        self._done_roots.add(label)
        target = getattr(module, "_orig_mod", None)
        if target is None or not hasattr(target, "get_submodule"):
            target = module
        found = []
        for m in wanted + ([seq] if seq is not None else []):
            try:
                sub = target.get_submodule(m.path)
            except Exception:
                sub = None
            if sub is None:
                self.outcome.refuse("%s has no module %s (its modules: %s)"
                                    % (label, m.path, root_paths(target)))
                return
            if m.type and type(sub).__name__ != m.type:
                self.outcome.refuse("%s.%s is a %s, the plan expects a %s (another model than "
                                    "the --from recording?)" % (label, m.path,
                                                               type(sub).__name__, m.type))
                return
            found.append((m, sub))
        try:
            for m, sub in found:
                if m is seq:
                    self._wrap_sequential(sub, m)
                else:
                    self._wrap_checkpoint(sub, m)
        except Exception as exc:
            self.outcome.refuse("wrapping the modules failed (%s: %s)" % (type(exc).__name__, exc))

    def _swap_class(self, module, kind, call):
        """`module`'s class becomes a subclass (one per class and kind) whose
        __call__ is `call`, kept on the instance: modules of one class take
        different choices in a mix (h.0 whole, h.2 with a save list)."""
        cls = type(module)
        key = (cls, kind)
        sub = self._classes.get(key)
        if sub is None:
            def dispatch(self, *args, **kwargs):
                return self.__dict__[_CALL](self, *args, **kwargs)
            sub = type(cls.__name__, (cls,), {"__call__": dispatch, "__module__": cls.__module__,
                                              "__qualname__": cls.__qualname__,
                                              "_memscope_applied": cls})
            self._classes[key] = sub
        module.__dict__[_CALL] = call
        module.__class__ = sub

        def undo():
            if type(module) is sub:
                module.__class__ = cls
            module.__dict__.pop(_CALL, None)
        self.outcome.add_undo(undo)

    def _training(self, module):
        return module.training and self.torch.is_grad_enabled()

    def _save_list_context(self, save):
        """(context_fn for checkpoint, or None; how the save list is kept)."""
        cp = self.torch.utils.checkpoint
        make = getattr(cp, "create_selective_checkpoint_contexts", None)
        policy = getattr(cp, "CheckpointPolicy", None)
        if make is not None and policy is not None:
            ops = frozenset(save)

            def policy_fn(ctx, op, *args, **kwargs):
                return policy.MUST_SAVE if _op_name(op) in ops else policy.PREFER_RECOMPUTE
            return functools.partial(make, policy_fn), SAVE_LISTS_API
        return None, SAVE_LISTS_OURS

    def _wrap_checkpoint(self, module, m):
        applier, torch = self, self.torch
        checkpoint = torch.utils.checkpoint.checkpoint
        original_call = type(module).__call__
        reentrant = self.plan.use_reentrant
        context_fn, how = (self._save_list_context(m.save) if m.save else (None, None))
        if m.save and reentrant:
            raise ValueError("save lists need a non-reentrant checkpoint")
        if how == SAVE_LISTS_OURS:
            cache_mode, replay_mode = _dispatch_cache_modes(torch)
        ops = frozenset(m.save)

        def __call__(self, *args, **kwargs):
            if applier.outcome.refused is not None or not applier._training(self):
                return original_call(self, *args, **kwargs)
            if reentrant and not any(torch.is_tensor(a) and a.requires_grad for a in args):
                # The reentrant checkpoint would drop its parameters' gradients.
                applier.outcome.refuse(
                    "%s's input needs no gradient: a reentrant checkpoint of it would drop its "
                    "parameters' gradients" % m.name())
                return original_call(self, *args, **kwargs)

            def run(*inputs):
                return original_call(self, *inputs, **kwargs)
            if how == SAVE_LISTS_API:
                return checkpoint(run, *args, use_reentrant=False, context_fn=context_fn)
            if how == SAVE_LISTS_OURS:
                cache, calls = [], [0]

                def run_cached(*inputs):
                    calls[0] += 1
                    mode = (cache_mode(ops, cache) if calls[0] == 1
                            else replay_mode(ops, cache))
                    with mode:
                        return run(*inputs)
                return checkpoint(run_cached, *args, use_reentrant=False)
            return checkpoint(run, *args, use_reentrant=reentrant)

        self._swap_class(module, "checkpoint", __call__)
        self.outcome.checkpointed.append(m.name())
        if how is not None:
            self.outcome.save_lists = how

    def _wrap_sequential(self, module, m):
        """The container's forward becomes checkpoint_sequential; its own
        hooks still run once, around the segments."""
        applier, torch = self, self.torch
        cp = torch.utils.checkpoint
        segments = self.plan.segments
        original_forward = module.forward
        try:
            import inspect
            takes_reentrant = "use_reentrant" in inspect.signature(
                cp.checkpoint_sequential).parameters
        except Exception:
            takes_reentrant = False
        extra = {"use_reentrant": True} if takes_reentrant else {}

        def forward(*args, **kwargs):
            if applier.outcome.refused is not None or not applier._training(module):
                return original_forward(*args, **kwargs)
            if len(args) != 1 or kwargs or not torch.is_tensor(args[0]):
                applier.outcome.refuse("%s is called with other than one tensor; "
                                       "checkpoint_sequential takes one input" % m.name())
                return original_forward(*args, **kwargs)
            if not args[0].requires_grad:
                applier.outcome.refuse(
                    "%s's input needs no gradient: the reentrant checkpoint_sequential would "
                    "drop the first segment's parameters' gradients" % m.name())
                return original_forward(*args, **kwargs)
            return cp.checkpoint_sequential(module, segments, args[0], **extra)

        module.forward = forward
        self.outcome.add_undo(lambda: module.__dict__.pop("forward", None))
        self.outcome.sequential = m.name()

    # ------------------------------------------------------------ opt-in-bwd
    def _watch_optimizers(self):
        Optimizer = self.torch.optim.Optimizer
        original_init = Optimizer.__init__
        applier = self

        @functools.wraps(original_init)
        def __init__(opt, *args, **kwargs):
            original_init(opt, *args, **kwargs)
            if applier._fusing or applier.outcome.refused is not None:
                return
            try:
                applier._fuse(opt)
            except Exception as exc:
                applier.outcome.refuse("fusing the optimizer step into backward failed (%s: %s)"
                                       % (type(exc).__name__, exc))

        Optimizer.__init__ = __init__
        self.outcome.add_undo(lambda: setattr(Optimizer, "__init__", original_init))

    def _fuse(self, opt):
        torch = self.torch
        cls = type(opt)
        if cls.__name__ == "LBFGS" or getattr(cls, "_memscope_closure_only", False):
            self.outcome.refuse("%s steps with a closure that re-evaluates the loss; its step "
                                "cannot run per parameter in backward" % cls.__name__)
            return
        params = []
        for group in opt.param_groups:
            for p in group["params"]:
                if not p.requires_grad:
                    continue
                if id(p) in self._fused:
                    self.outcome.refuse("a parameter belongs to two optimizers")
                    return
                if p.is_sparse:
                    self.outcome.refuse("sparse parameters are not supported")
                    return
                params.append((p, group))
        if not params:
            return
        self._fusing = True
        try:
            per = []
            for p, group in params:
                hyper = {k: v for k, v in group.items() if k != "params"}
                single = cls([p], **hyper)
                single._memscope_fused = True   # torch_hooks: no optimizer phase of its own
                per.append((p, single, group))
        finally:
            self._fusing = False
        post_hook = hasattr(torch.Tensor, "register_post_accumulate_grad_hook")
        for p, single, group in per:
            self._fused[id(p)] = (single, group)
            self._hook_param(p, single, group, post_hook)
        self._silence(opt)
        self.outcome.optimizer = ("Tensor.register_post_accumulate_grad_hook" if post_hook
                                  else "AccumulateGrad node hooks")

    def _hook_param(self, p, single, group, post_hook):
        applier = self

        def step_now():
            if applier.outcome.refused is not None or p.grad is None:
                return
            # The job's schedulers change its optimizer's groups: copied in first.
            target = single.param_groups[0]
            for k, v in group.items():
                if k != "params":
                    target[k] = v
            single.step()
            p.grad = None

        if post_hook:
            self._hooks.append(p.register_post_accumulate_grad_hook(lambda _p: step_now()))
            return
        with self.torch.enable_grad():
            node = p.expand_as(p).grad_fn.next_functions[0][0]
        node.register_hook(lambda grad_inputs, grad_outputs: step_now())
        self._hooks.append(node)   # the node lives only as long as a reference to it

    def _silence(self, opt):
        """The job's own step and zero_grad do nothing while the fused step
        runs (its parameters are all fused); back to themselves if refused."""
        applier = self
        step, zero_grad = opt.step, opt.zero_grad

        def fused_step(closure=None):
            if applier.outcome.refused is not None:
                return step(closure) if closure is not None else step()
            if closure is not None:
                applier.outcome.refuse("optimizer.step(closure) re-evaluates the loss; not "
                                       "supported with the step in backward")
                return step(closure)
            return None

        def fused_zero_grad(*args, **kwargs):
            if applier.outcome.refused is not None:
                return zero_grad(*args, **kwargs)
            return None

        opt.step, opt.zero_grad = fused_step, fused_zero_grad

        def undo():
            opt.__dict__.pop("step", None)
            opt.__dict__.pop("zero_grad", None)
        self.outcome.add_undo(undo)

    def _watch_clipping(self):
        """Clipping needs every gradient before any step: refused."""
        utils = self.torch.nn.utils
        clip = getattr(utils, "clip_grad", None)
        applier = self
        for name in ("clip_grad_norm_", "clip_grad_value_", "clip_grad_norm"):
            for owner in (utils, clip):
                original = getattr(owner, name, None) if owner is not None else None
                if original is None or getattr(original, "_memscope_apply", False):
                    continue

                def make(original=original, name=name):
                    @functools.wraps(original)
                    def clipped(parameters, *args, **kwargs):
                        if applier.outcome.refused is None and applier._fused:
                            if applier.torch.is_tensor(parameters):
                                parameters = [parameters]
                            parameters = list(parameters)
                            if any(id(p) in applier._fused for p in parameters):
                                applier.outcome.refuse(
                                    "the job calls torch.nn.utils.%s, which needs every "
                                    "gradient before any step: the step cannot be fused into "
                                    "backward exactly" % name)
                        return original(parameters, *args, **kwargs)
                    clipped._memscope_apply = True
                    return clipped
                setattr(owner, name, make())


def _dispatch_cache_modes(torch):
    """(cache mode, replay mode): memscope's rebuild of PyTorch 2.4's
    selective checkpoint for older PyTorch (as
    tests/bench/whatif/scripts/hand_policies.py proves it on 1.13)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    def call(func, args, kwargs):
        # 1.13 hands a wrapped number (the 8.0 of `x / 8.0`) to the mode as
        # a Python float; the checkpoint's pack hook detaches it inside the
        # mode, which aten::detach refuses.
        if (func is torch.ops.aten.detach.default and args
                and not isinstance(args[0], torch.Tensor)):
            return torch.tensor(args[0])
        return func(*args, **(kwargs or {}))

    class CacheOutputs(TorchDispatchMode):
        def __init__(self, ops, cache):
            super().__init__()
            self.ops, self.cache = ops, cache

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = call(func, args, kwargs)
            if _op_name(func) in self.ops:
                self.cache.append(out.detach())   # the same memory, kept to the recompute
            return out

    class ReplayOutputs(TorchDispatchMode):
        def __init__(self, ops, cache):
            super().__init__()
            self.ops, self.cache = ops, cache

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if _op_name(func) in self.ops and self.cache:
                return self.cache.pop(0)
            return call(func, args, kwargs)

    return CacheOutputs, ReplayOutputs


def install(torch, path, problem, modules, stream=None):
    """The Outcome of applying the plan at `path` (MEMSCOPE_APPLY); refused
    at once when the variable or the plan is bad."""
    policy = "?"
    plan = None
    if problem is None:
        try:
            plan = read_plan(path)
            policy = plan.policy
        except PlanError as exc:
            problem = "the apply plan is unusable: %s" % exc
    outcome = Outcome(policy, stream)
    if problem is not None:
        outcome.wanted.append("plan")
        outcome.refuse(problem)
        return outcome
    Applier(torch, plan, outcome, modules).install()
    return outcome
