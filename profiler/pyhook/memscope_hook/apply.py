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

The plan's reading (apply_plan.py) and the bookkeeping are pure Python (no
torch import), so they are unit-tested on their own (tests/pyhook/
test_apply.py); the fused optimizer is apply_optimizer.py.
"""
import functools
import sys
import threading

from .apply_plan import (  # noqa: F401  (the plan API, as before)
    FORMAT, MAX_MODULES, MAX_PLAN_BYTES, MAX_SEGMENTS, MAX_TEXT, Module, Plan, PlanError,
    parse_plan, read_plan)
from .apply_optimizer import OptimizerFusion

SAVE_LISTS_API = "selective-checkpoint-api"
SAVE_LISTS_OURS = "memscope-dispatch-cache"


# The instance attribute holding a wrapped module's own __call__.
_CALL = "_memscope_apply_call"


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
        self._done_roots = set()
        self.optimizer = OptimizerFusion(torch, outcome)

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
            self.optimizer.install()

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
