"""Tensor roles: what the tensors the hook can see are, by storage address.

Without them every category in a recording is inferred from the phases, and
the inference cannot tell a gradient kept across steps from optimizer state.
The hook sees the tensors themselves: a root module's parameters and buffers
and its positional inputs (forward pre-hook), the gradients of an optimizer's
parameters (its step pre-hook; after backward when no optimizer ever stepped)
and the optimizer's state (its step post-hook). Each is logged as (device,
storage address, storage bytes) under its role at the moment it is known;
core's merge labels the allocation holding that address then (log.jsonl's
"tensor_roles" records; docs/HOOK_FORMAT.md has the schema).

Pure Python with no torch import, so it can be unit-tested with fakes: a
tensor is whatever is_tensor() accepts, with data_ptr(), device (.type,
.index) and untyped_storage() (2.x) or storage() (1.13), each giving
data_ptr() and nbytes().

Costs: parameters, buffers and optimizer state are kept alive by the model
and the optimizer, so one whose data_ptr() is unchanged since it was logged
is the same allocation and is not looked at again (a weak reference tells a
new tensor at a reused address from the old one; no tensor is kept alive
here). Gradients and inputs are logged every time: set_to_none and new
batches make new allocations each step.
"""
import time
import weakref

PARAMETER = "parameter"
GRADIENT = "gradient"
OPTIMIZER_STATE = "optimizer_state"
INPUT = "input"
ROLES = (PARAMETER, GRADIENT, OPTIMIZER_STATE, INPUT)

CPU_DEVICE = -1      # core's Event::device for host memory
BATCH = 4096         # tensors per log record (core's reader takes any count)
MAX_INPUT_ITEMS = 256  # items looked at in a forward's arguments (one level into lists, dicts)
_MAX_ROOTS = 64      # roots remembered for gradients after backward (no optimizer)


def _duck_tensor(x):
    return hasattr(x, "data_ptr") and (hasattr(x, "untyped_storage") or hasattr(x, "storage"))


def _device_index(t):
    """core's device number: -1 for the CPU, the CUDA ordinal; None for any
    other device (meta, mps, xla: no allocation memscope records)."""
    device = t.device
    kind = device.type
    if kind == "cpu":
        return CPU_DEVICE
    if kind == "cuda":
        index = device.index
        return int(index) if index is not None else 0
    return None


def storage_of(t):
    """(device, address, bytes) of the allocation behind tensor `t` (its
    storage: a view's is its base's), or None where it has none (sparse,
    meta, empty) or it cannot be read."""
    device = _device_index(t)
    if device is None:
        return None
    get = getattr(t, "untyped_storage", None)   # 2.x; storage() warns there
    if get is None:
        get = t.storage                         # 1.13: TypedStorage
    s = get()
    ptr = int(s.data_ptr())
    nbytes = int(s.nbytes())
    if ptr <= 0 or nbytes <= 0:
        return None
    return device, ptr, nbytes


class TensorRoles:
    """note(record): appends a log record (the phase recorder's note, which
    sequences it); clock: ns on the phases' clock; is_tensor: torch.is_tensor
    (duck typing by default, for tests)."""

    def __init__(self, note, clock=None, is_tensor=None):
        self._note = note
        self._clock = clock or time.time_ns
        self._is_tensor = is_tensor or _duck_tensor
        self.enabled = True    # False while an attachable process records nothing
        self.reset()

    def reset(self):
        """Forget everything (a forked child logs to a file of its own)."""
        self.root_count = -1   # the phase recorder's root_forwards last handled (torch_hooks)
        self._known = {}       # id(tensor) -> (weak ref, data_ptr when logged)
        self._roots = []       # weak refs to the roots seen (gradients without optimizer)
        self._optimizers = []  # weak refs to the optimizers seen (summary())
        self._optimizer_seen = False
        self._backward_depth = 0
        self.labels = 0        # tensors logged
        self.unreadable = 0    # tensors whose storage could not be read

    # ---------------------------------------------------------------- events
    def root_forward(self, module, args):
        """The outermost module's forward is about to run: its parameters and
        buffers (those new or moved since last logged) and its inputs."""
        if not self.enabled:
            self._remember_root(module)   # for summary() (top); nothing logged
            return
        t = self._clock()
        params = []
        for tensor in self._module_tensors(module):
            if self._changed(tensor):
                self._add(params, tensor)
        self._emit(PARAMETER, t, params)
        inputs = []
        for tensor in self._tensors_in(args):
            self._add(inputs, tensor)
        self._emit(INPUT, t, inputs)
        self._remember_root(module)

    def backward_begin(self):
        self._backward_depth += 1

    def backward_end(self):
        """torch.autograd.backward returned. Without an optimizer (a manual
        update loop), the gradients of the roots' parameters are known now;
        with one, its step pre-hook logs them (also those of optimizers that
        step inside backward)."""
        if self._backward_depth > 0:
            self._backward_depth -= 1
        if self._backward_depth or self._optimizer_seen or not self.enabled:
            return
        t = self._clock()
        grads = []
        for ref in list(self._roots):
            module = ref()
            if module is None:
                continue
            for p in module.parameters():
                g = getattr(p, "grad", None)
                if g is not None:
                    self._add(grads, g)
        self._emit(GRADIENT, t, grads)

    def optimizer_pre(self, optimizer):
        """An optimizer step starts: the gradients it is about to read."""
        self._optimizer_seen = True
        self._remember_optimizer(optimizer)   # for summary() (top)
        if not self.enabled:
            return
        t = self._clock()
        grads = []
        for group in optimizer.param_groups:
            for p in group["params"]:
                g = getattr(p, "grad", None)
                if g is not None:
                    self._add(grads, g)
        self._emit(GRADIENT, t, grads)

    def optimizer_post(self, optimizer):
        """An optimizer step ended: its state (any Optimizer subclass keeps
        it in optimizer.state[param], a dict of tensors and numbers; lists of
        tensors are looked into once, as LBFGS keeps them)."""
        if not self.enabled:
            return
        t = self._clock()
        state = []
        for per_param in list(optimizer.state.values()):
            values = per_param.values() if isinstance(per_param, dict) else (per_param,)
            for value in list(values):
                if isinstance(value, (list, tuple)):
                    items = value[:MAX_INPUT_ITEMS]
                else:
                    items = (value,)
                for item in items:
                    if self._is_tensor(item) and self._changed(item):
                        self._add(state, item)
        self._emit(OPTIMIZER_STATE, t, state)

    # ------------------------------------------------------------- internals
    def _module_tensors(self, module):
        # torch.compile's wrapper holds the model as _orig_mod (same tensors).
        target = getattr(module, "_orig_mod", None)
        if target is None or not hasattr(target, "parameters"):
            target = module
        for p in target.parameters():
            yield p
        # BatchNorm's running statistics: state of the model, "parameter" in
        # memscope's categories.
        for b in target.buffers():
            if b is not None:
                yield b

    def _tensors_in(self, args):
        """The tensors among a forward's positional arguments, one level into
        lists, tuples and dicts (a batch as a dict)."""
        seen = 0
        for a in args:
            if seen >= MAX_INPUT_ITEMS:
                return
            if self._is_tensor(a):
                seen += 1
                yield a
            elif isinstance(a, (list, tuple)):
                for x in a[:MAX_INPUT_ITEMS]:
                    seen += 1
                    if self._is_tensor(x):
                        yield x
            elif isinstance(a, dict):
                for x in list(a.values())[:MAX_INPUT_ITEMS]:
                    seen += 1
                    if self._is_tensor(x):
                        yield x

    def _changed(self, tensor):
        """Whether `tensor` is not yet logged at its current address; notes
        it as logged. Keyed by id() with a weak reference, so that a new
        tensor that took a dead one's id is seen as new."""
        key = id(tensor)
        ptr = tensor.data_ptr()
        hit = self._known.get(key)
        if hit is not None and hit[0]() is tensor and hit[1] == ptr:
            return False
        known = self._known
        try:
            ref = weakref.ref(tensor, lambda r, k=key: known.pop(k, None)
                              if known.get(k, (None,))[0] is r else None)
        except TypeError:
            return True  # no weak references: logged every time
        known[key] = (ref, ptr)
        return True

    def _add(self, out, tensor):
        try:
            where = storage_of(tensor)
        except Exception:
            self.unreadable += 1
            return
        if where is not None:
            out.append(where)

    def _remember_root(self, module):
        for ref in self._roots:
            if ref() is module:
                return
        self._roots = [r for r in self._roots if r() is not None]
        if len(self._roots) < _MAX_ROOTS:
            try:
                self._roots.append(weakref.ref(module))
            except TypeError:
                pass

    def _remember_optimizer(self, optimizer):
        for ref in self._optimizers:
            if ref() is optimizer:
                return
        self._optimizers = [r for r in self._optimizers if r() is not None]
        if len(self._optimizers) < _MAX_ROOTS:
            try:
                self._optimizers.append(weakref.ref(optimizer))
            except TypeError:
                pass

    def summary(self, device, top=5):
        """What the roots and optimizers seen hold on `device` (-1: CPU), for
        `memscope-cli top`: ({role: bytes}, [(module, bytes)] the largest
        top-level modules by their parameters, gradients and optimizer state).
        Call it from the training thread only (between ops: tensors read
        while an op changes them can crash); each storage counted once."""
        seen = set()
        roles = {PARAMETER: 0, GRADIENT: 0, OPTIMIZER_STATE: 0}

        def size(t):
            try:
                where = storage_of(t)
            except Exception:
                return 0
            if where is None or where[0] != device or (where[0], where[1]) in seen:
                return 0
            seen.add((where[0], where[1]))
            return where[2]

        state_of = {}
        for ref in list(self._optimizers):
            opt = ref()
            if opt is None:
                continue
            for param, per_param in list(getattr(opt, "state", {}).items()):
                values = per_param.values() if isinstance(per_param, dict) else (per_param,)
                state_of[id(param)] = [v for v in list(values) if self._is_tensor(v)]
        modules = []
        for ref in list(self._roots):
            root = ref()
            if root is None:
                continue
            target = getattr(root, "_orig_mod", None) or root
            children = list(target.named_children()) or [(type(target).__name__, target)]
            # Wrappers (DistributedDataParallel's `module`): their one child's children.
            for _ in range(4):
                if len(children) != 1 or children[0][1] is None:
                    break
                prefix, only = children[0]
                inner = list(only.named_children())
                if not inner:
                    break
                children = [("%s.%s" % (prefix, n), c) for n, c in inner]
            for name, child in children:
                total = 0
                for p in list(child.parameters()):
                    n = size(p)
                    roles[PARAMETER] += n
                    g = getattr(p, "grad", None)
                    m = size(g) if g is not None else 0
                    roles[GRADIENT] += m
                    k = sum(size(s) for s in state_of.get(id(p), ()))
                    roles[OPTIMIZER_STATE] += k
                    total += n + m + k
                if total:
                    modules.append((name, total))
        modules.sort(key=lambda m: -m[1])
        return roles, modules[:top]

    def _emit(self, role, t, found):
        """Log `found` [(device, address, bytes)] under `role`, each storage
        once (tied weights, views of one buffer)."""
        if not found:
            return
        unique = list(dict.fromkeys(found))
        self.labels += len(unique)
        for first in range(0, len(unique), BATCH):
            flat = []
            for device, ptr, nbytes in unique[first:first + BATCH]:
                flat += (device, ptr, nbytes)
            self._note({"t": "tensor_roles", "role": role, "time_ns": t, "s": flat})
