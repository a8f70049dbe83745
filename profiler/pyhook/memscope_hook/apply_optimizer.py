"""record --apply's opt-in-bwd: the optimizer step fused into backward, as
PyTorch's tutorial "How to save memory by fusing the optimizer step into
the backward pass" does it, on a job that was not written for it. When the
job builds an optimizer, one of its class per parameter is made with that
parameter's group's settings and stepped by a hook as soon as the
parameter's gradient is accumulated (Tensor.register_post_accumulate_grad_hook
on PyTorch 2.1+, else a hook on its AccumulateGrad node); the job's own
step() and zero_grad() then do nothing for them. What cannot be exact (a
closure-based optimizer, gradient clipping, a parameter in two optimizers,
sparse parameters) is refused through the Outcome (apply.py)."""
import functools


class OptimizerFusion:
    def __init__(self, torch, outcome):
        self.torch = torch
        self.outcome = outcome
        self._fused = {}             # id(param) -> (per-parameter optimizer, user's group)
        self._fusing = False         # building the per-parameter optimizers
        self._hooks = []             # AccumulateGrad nodes / hook handles kept alive

    def install(self):
        self._watch_optimizers()
        self._watch_clipping()

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
