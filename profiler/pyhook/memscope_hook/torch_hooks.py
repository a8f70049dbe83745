"""Install the phase hooks into torch, falling back where an API is missing.

Each installer returns the text hook.json shows under "hooks": what was
installed, or "unavailable: <why>". Hook bodies never let an exception reach
the user's code: a failure is reported once as a warning.
"""
import functools
import importlib
import inspect


def _params(fn):
    try:
        return inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return {}


class _Guard:
    """Reports the first failure of each hook site; the training goes on."""

    def __init__(self, warn):
        self._warn = warn
        self._seen = set()

    def failed(self, where, exc, what="its phases"):
        if where not in self._seen:
            self._seen.add(where)
            self._warn("%s hook failed (%s: %s); %s may be wrong"
                       % (where, type(exc).__name__, exc, what))


def install(torch, rec, warn, nvtx=None, modules=None, module_backward=False, roles=None,
            late=False):
    """nvtx: an object with nvtx_push(name) / nvtx_pop() (the capture range),
    or None to leave torch.cuda.nvtx alone. modules: a modules.ModuleRecorder
    (module scopes), or None; module_backward: also record backward scopes
    where PyTorch has global module backward hooks. roles: a
    tensor_roles.TensorRoles, told of root forwards, backward ends and
    optimizer steps by the same hooks, or None. late: torch was in use before
    (memscope.attachable()/start() in a running program): optimizers built
    already get their class's step wrapped too (before 2.0)."""
    guard = _Guard(warn)
    hooks = {}
    mods = modules if modules is not None and modules.depth > 0 else None
    for name, installer in (("forward", functools.partial(_forward, mods=mods, roles=roles)),
                            ("backward", functools.partial(_backward, roles=roles)),
                            ("recompute", _recompute),
                            ("optimizer", functools.partial(_optimizer, roles=roles, late=late)),
                            ("zero_grad", _zero_grad)):
        try:
            hooks[name] = installer(torch, rec, guard)
        except Exception as exc:
            hooks[name] = "unavailable: %s: %s" % (type(exc).__name__, exc)
    if modules is not None:
        for name, installer in (("modules", _modules), ("module_backward", _module_backward),
                                ("compile", _compile)):
            try:
                hooks[name] = installer(torch, modules, guard, hooks, module_backward)
            except Exception as exc:
                hooks[name] = "unavailable: %s: %s" % (type(exc).__name__, exc)
    if nvtx is not None:
        try:
            hooks["nvtx"] = _nvtx(torch, nvtx, guard)
        except Exception as exc:
            hooks["nvtx"] = "unavailable: %s: %s" % (type(exc).__name__, exc)
    return hooks


def optimizer_params(optimizer):
    """The ids of an optimizer's parameters (phases.Recorder tells a second
    optimizer of the same iteration from a replacement by them); None if
    unknown."""
    try:
        return frozenset(id(p) for group in optimizer.param_groups for p in group["params"])
    except Exception:
        return None


def _nvtx(torch, listener, guard):
    """torch.cuda.nvtx.range_push / range_pop (which torch.cuda.nvtx.range
    calls through the module): the capture range sees them before NVTX does
    (on a CPU-only build the original then raises, as it always did)."""
    mod = importlib.import_module("torch.cuda.nvtx")
    push, pop = mod.range_push, mod.range_pop
    if getattr(push, "_memscope_wrapped", False):
        return "wrapped torch.cuda.nvtx.range_push+range_pop"

    @functools.wraps(push)
    def range_push(msg, *args, **kwargs):
        try:
            listener.nvtx_push(str(msg))
        except Exception as exc:
            guard.failed("torch.cuda.nvtx.range_push", exc)
        return push(msg, *args, **kwargs)

    @functools.wraps(pop)
    def range_pop(*args, **kwargs):
        try:
            listener.nvtx_pop()
        except Exception as exc:
            guard.failed("torch.cuda.nvtx.range_pop", exc)
        return pop(*args, **kwargs)

    range_push._memscope_wrapped = True
    range_pop._memscope_wrapped = True
    mod.range_push, mod.range_pop = range_push, range_pop
    return "wrapped torch.cuda.nvtx.range_push+range_pop"


def _root_watch(rec, roles, guard):
    """A function of (module, args) that tells `roles` of each root forward:
    the phase recorder counts them (rec.root_forwards), so that other module
    calls cost one comparison. None without roles."""
    if roles is None:
        return None

    def watch(module, args):
        count = rec.root_forwards
        if count != roles.root_count and count > 0:
            roles.root_count = count
            try:
                roles.root_forward(module, args)
            except Exception as exc:
                guard.failed("tensor roles (forward)", exc, "its tensor roles")
    return watch


def _forward(torch, rec, guard, mods=None, roles=None):
    mm = torch.nn.modules.module
    reg_pre = getattr(mm, "register_module_forward_pre_hook", None)
    reg_post = getattr(mm, "register_module_forward_hook", None)
    if reg_pre is None or reg_post is None:
        return "unavailable: no global module forward hooks in this PyTorch"
    module_pre, module_post = rec.module_pre, rec.module_post
    watch = _root_watch(rec, roles, guard)

    # Kept minimal: they run for every module call.
    if mods is None and watch is None:
        def pre(module, args):
            try:
                module_pre()
            except Exception as exc:
                guard.failed("forward pre", exc)

        def post(module, args, output):
            try:
                module_post()
            except Exception as exc:
                guard.failed("forward", exc)
    elif mods is None:
        def pre(module, args):
            try:
                module_pre()
            except Exception as exc:
                guard.failed("forward pre", exc)
            watch(module, args)

        def post(module, args, output):
            try:
                module_post()
            except Exception as exc:
                guard.failed("forward", exc)
    else:
        scope_pre, scope_post = mods.pre, mods.post

        def pre(module, args):
            try:
                recompute = module_pre()
            except Exception as exc:
                guard.failed("forward pre", exc)
                recompute = False
            try:
                scope_pre(module, recompute)
            except Exception as exc:
                guard.failed("module scope pre", exc, "its module scopes")
            if watch is not None:
                watch(module, args)

        # The scope closes before the phase does (and opens after it): a
        # recomputed module's scope lies inside its recompute phase.
        def post(module, args, output):
            try:
                scope_post(module)
            except Exception as exc:
                guard.failed("module scope", exc, "its module scopes")
            try:
                module_post()
            except Exception as exc:
                guard.failed("forward", exc)

    reg_pre(pre)
    # always_call (2.1+): the post hook runs even when forward raises, so the
    # depth counter stays right; before that, backward resets it.
    if "always_call" in _params(reg_post):
        reg_post(post, always_call=True)
        return "register_module_forward_pre_hook+register_module_forward_hook(always_call=True)"
    reg_post(post)
    return "register_module_forward_pre_hook+register_module_forward_hook"


def _wrap_backward_fn(ag, name, rec, guard, is_grad, roles=None):
    original = getattr(ag, name)
    if getattr(original, "_memscope_wrapped", False):
        return
    # autograd.grad fills no .grad: only backward tells the roles.
    roles = None if is_grad else roles

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        try:
            tracked = rec.backward_begin(is_grad)
        except Exception as exc:
            guard.failed(name, exc)
            tracked = False
        if roles is not None:
            roles.backward_begin()
        try:
            return original(*args, **kwargs)
        finally:
            if tracked:
                try:
                    rec.backward_end()
                except Exception as exc:
                    guard.failed(name, exc)
            if roles is not None:
                try:
                    roles.backward_end()
                except Exception as exc:
                    guard.failed("tensor roles (backward)", exc, "its tensor roles")

    wrapper._memscope_wrapped = True
    setattr(ag, name, wrapper)


def _backward(torch, rec, guard, roles=None):
    # Tensor.backward and torch.utils.checkpoint call these through the module
    # attribute, so replacing the attribute catches them.
    _wrap_backward_fn(torch.autograd, "backward", rec, guard, False, roles)
    _wrap_backward_fn(torch.autograd, "grad", rec, guard, True)
    return "wrapped torch.autograd.backward+torch.autograd.grad"


def _recompute(torch, rec, guard):
    base = "module forwards during backward"
    try:
        cp = importlib.import_module("torch.utils.checkpoint")
    except Exception as exc:
        return base + " (torch.utils.checkpoint not importable: %s)" % exc
    cf = getattr(cp, "CheckpointFunction", None)
    raw = cf.__dict__.get("backward") if cf is not None else None
    if raw is None:
        return base + " (no reentrant CheckpointFunction in this PyTorch)"
    original = raw.__func__ if isinstance(raw, staticmethod) else raw
    if getattr(original, "_memscope_wrapped", False):
        return base + "+wrapped CheckpointFunction.backward"

    # Reentrant checkpoints of plain functions run no module: this catches
    # them. The autograd engine looks `backward` up on the class at call time.
    @functools.wraps(original)
    def backward(ctx, *grads):
        try:
            opened = rec.checkpoint_begin()
        except Exception as exc:
            guard.failed("CheckpointFunction.backward", exc)
            return original(ctx, *grads)
        try:
            return original(ctx, *grads)
        finally:
            try:
                rec.checkpoint_end(opened)
            except Exception as exc:
                guard.failed("CheckpointFunction.backward", exc)

    backward._memscope_wrapped = True
    cf.backward = staticmethod(backward)
    return base + "+wrapped CheckpointFunction.backward"


def _roles_step(roles, guard):
    """(before, after) an optimizer step for the tensor roles: the gradients
    it reads, the state it keeps. No-ops without roles."""
    if roles is None:
        return (lambda optimizer: None), (lambda optimizer: None)

    def before(optimizer):
        try:
            roles.optimizer_pre(optimizer)
        except Exception as exc:
            guard.failed("tensor roles (optimizer step pre)", exc, "its tensor roles")

    def after(optimizer):
        try:
            roles.optimizer_post(optimizer)
        except Exception as exc:
            guard.failed("tensor roles (optimizer step)", exc, "its tensor roles")
    return before, after


def _optimizer(torch, rec, guard, roles=None, late=False):
    optmod = importlib.import_module("torch.optim.optimizer")
    reg_pre = getattr(optmod, "register_optimizer_step_pre_hook", None)
    reg_post = getattr(optmod, "register_optimizer_step_post_hook", None)
    roles_before, roles_after = _roles_step(roles, guard)
    if reg_pre is not None and reg_post is not None:
        def pre(optimizer, args, kwargs):
            if getattr(optimizer, "_memscope_fused", False):
                return  # record --apply's per-parameter step inside backward (apply.py)
            try:
                rec.optimizer_begin(optimizer)
            except Exception as exc:
                guard.failed("optimizer step pre", exc)
            roles_before(optimizer)

        def post(optimizer, args, kwargs):
            roles_after(optimizer)
            if getattr(optimizer, "_memscope_fused", False):
                return
            try:
                rec.optimizer_end(optimizer)
            except Exception as exc:
                guard.failed("optimizer step post", exc)

        reg_pre(pre)
        reg_post(post)
        return "register_optimizer_step_pre_hook+register_optimizer_step_post_hook"

    # Before 2.0: wrap each optimizer class's step when its first instance is
    # built (subclasses define their own step, so the base class is not enough).
    Optimizer = torch.optim.Optimizer
    original_init = Optimizer.__init__
    if getattr(original_init, "_memscope_wrapped", False):
        return "wrapped Optimizer.step per class (from Optimizer.__init__)"

    @functools.wraps(original_init)
    def __init__(self, *args, **kwargs):
        original_init(self, *args, **kwargs)
        try:
            _wrap_step(type(self), rec, guard, roles_before, roles_after)
        except Exception as exc:
            guard.failed("Optimizer.__init__", exc)

    __init__._memscope_wrapped = True
    Optimizer.__init__ = __init__
    if late:
        import gc
        # type(), not isinstance: that would ask proxies (deprecated module
        # attributes) for their __class__, which warns.
        for cls in {type(o) for o in gc.get_objects() if issubclass(type(o), Optimizer)}:
            _wrap_step(cls, rec, guard, roles_before, roles_after)
    return "wrapped Optimizer.step per class (from Optimizer.__init__)"


def _wrap_step(cls, rec, guard, roles_before=None, roles_after=None):
    step = getattr(cls, "step", None)
    # The marker sits on the function, so a subclass inheriting an already
    # wrapped step is not wrapped twice. functools.wraps copies __dict__, which
    # keeps 1.13's own `hooked` marker (Optimizer._hook_for_profile wraps step
    # once per class too, before us: ours goes outside).
    if step is None or getattr(step, "_memscope_wrapped", False):
        return

    @functools.wraps(step)
    def wrapper(self, *args, **kwargs):
        if getattr(self, "_memscope_fused", False):
            # record --apply's per-parameter step inside backward (apply.py):
            # no optimizer phase of its own.
            result = step(self, *args, **kwargs)
            if roles_after is not None:
                roles_after(self)
            return result
        try:
            rec.optimizer_begin(self)
        except Exception as exc:
            guard.failed("Optimizer.step", exc)
        if roles_before is not None:
            roles_before(self)
        completed = False
        try:
            result = step(self, *args, **kwargs)
            completed = True
            return result
        finally:
            # As the 2.0+ post hook: only after a step that returned.
            if completed and roles_after is not None:
                roles_after(self)
            try:
                rec.optimizer_end(self)
            except Exception as exc:
                guard.failed("Optimizer.step", exc)

    wrapper._memscope_wrapped = True
    cls.step = wrapper


def _wrap_zero_grad(cls, rec, guard, label):
    original = cls.zero_grad
    if getattr(original, "_memscope_wrapped", False):
        return

    @functools.wraps(original)
    def zero_grad(self, *args, **kwargs):
        try:
            rec.zero_grad_begin()
        except Exception as exc:
            guard.failed(label, exc)
        try:
            return original(self, *args, **kwargs)
        finally:
            try:
                rec.zero_grad_end()
            except Exception as exc:
                guard.failed(label, exc)

    zero_grad._memscope_wrapped = True
    cls.zero_grad = zero_grad


def _zero_grad(torch, rec, guard):
    _wrap_zero_grad(torch.optim.Optimizer, rec, guard, "Optimizer.zero_grad")
    _wrap_zero_grad(torch.nn.Module, rec, guard, "Module.zero_grad")
    return "wrapped Optimizer.zero_grad+Module.zero_grad"


def _modules(torch, mods, guard, hooks, backward):
    if mods.depth <= 0:
        return "off: --module-depth 0"
    forward = hooks.get("forward", "")
    if forward.startswith("unavailable"):
        return "unavailable: needs the global module forward hooks (%s)" % forward
    return "module scopes from the forward hooks, %d levels deep" % mods.depth


def _module_backward(torch, mods, guard, hooks, enabled):
    mm = torch.nn.modules.module
    reg_pre = getattr(mm, "register_module_full_backward_pre_hook", None)
    reg_post = getattr(mm, "register_module_full_backward_hook", None)
    if reg_pre is None or reg_post is None:
        return ("unavailable: no global module backward pre-hook in this PyTorch (2.0+); "
                "backward allocations have no module")
    if mods.depth <= 0:
        return "off: --module-depth 0"
    if not enabled:
        # Global full backward hooks wrap every module's inputs and outputs in
        # a custom autograd function: an in-place op on a module's output
        # (ResNet's `out += identity`) then fails. Not on by default.
        return ("off: global full backward hooks make in-place ops on module outputs fail; "
                "memscope-cli record --module-backward turns them on")
    scope_pre, scope_post = mods.backward_pre, mods.backward_post

    def pre(module, grad_output):
        try:
            scope_pre(module)
        except Exception as exc:
            guard.failed("module backward pre", exc, "its module scopes")

    def post(module, grad_input, grad_output):
        try:
            scope_post(module)
        except Exception as exc:
            guard.failed("module backward", exc, "its module scopes")

    reg_pre(pre)
    reg_post(post)
    return "register_module_full_backward_pre_hook+register_module_full_backward_hook"


def _compile(torch, mods, guard, hooks, backward):
    """torch.compile (2.0+): module hooks may not run inside compiled code.
    Wrapped to note that it was used (hook.json and the trace say so)."""
    original = getattr(torch, "compile", None)
    if original is None:
        return "unavailable: no torch.compile in this PyTorch"
    if getattr(original, "_memscope_wrapped", False):
        return "wrapped torch.compile (notes its use)"

    @functools.wraps(original)
    def compile(*args, **kwargs):
        mods.compile_seen = True
        return original(*args, **kwargs)

    compile._memscope_wrapped = True
    torch.compile = compile
    return "wrapped torch.compile (notes its use)"
