#!/usr/bin/env python3
"""Tensor roles alone (profiler/pyhook/memscope_hook/tensor_roles.py) and
their hooks (torch_hooks.py), with fake tensors, modules, optimizers and a
fake torch: no torch needed, so the PyTorch 2.x paths (untyped_storage,
register_optimizer_step_pre/post_hook) are tested on a machine with 1.13.

usage: test_tensor_roles.py      (ctest: memscope_pyhook_tensor_roles_unit)
"""
import os
import sys
import types
import unittest

sys.dont_write_bytecode = True

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_HOOK = os.path.normpath(os.path.join(HERE, "..", "..", "profiler", "pyhook"))
HOOK = os.environ.get("MEMSCOPE_PYHOOK_DIR") or SOURCE_HOOK
sys.path.insert(0, HOOK)

from memscope_hook import config, phases, tensor_roles, torch_hooks  # noqa: E402


# ------------------------------------------------------------------ fakes
class Device:
    def __init__(self, kind, index=None):
        self.type, self.index = kind, index


class Storage:
    def __init__(self, ptr, nbytes):
        self.ptr, self.size = ptr, nbytes

    def data_ptr(self):
        return self.ptr

    def nbytes(self):
        return self.size


class Tensor:
    """A 2.x tensor: untyped_storage(); data_ptr() may be inside it (a view)."""

    def __init__(self, ptr, nbytes, device=None, offset=0):
        self.store = Storage(ptr, nbytes)
        self.offset = offset
        self.device = device or Device("cpu")
        self.grad = None
        self.storage_calls = 0

    def data_ptr(self):
        return self.store.ptr + self.offset

    def untyped_storage(self):
        self.storage_calls += 1
        return self.store

    def storage(self):
        raise AssertionError("storage() warns on 2.x: untyped_storage() must be used")

    def move(self, ptr):
        self.store = Storage(ptr, self.store.size)


class LegacyTensor(Tensor):
    """A 1.13 tensor: storage() (TypedStorage) only."""
    untyped_storage = None

    def __getattribute__(self, name):
        if name == "untyped_storage":
            raise AttributeError(name)
        return object.__getattribute__(self, name)

    def storage(self):
        self.storage_calls += 1
        return self.store


class Broken(Tensor):
    def untyped_storage(self):
        raise RuntimeError("sparse tensors have no storage")


class Module:
    def __init__(self, params=(), buffers=()):
        self._params, self._buffers = list(params), list(buffers)

    def parameters(self):
        return iter(self._params)

    def buffers(self):
        return iter(self._buffers)


class Optimizer:
    def __init__(self, *groups):
        self.param_groups = [{"params": list(g)} for g in groups]
        self.state = {}


def is_tensor(x):
    return isinstance(x, Tensor)


class Clock:
    def __init__(self):
        self.t = 0

    def __call__(self):
        self.t += 10
        return self.t


def triples(records, role=None):
    out = []
    for r in records:
        assert r["t"] == "tensor_roles", r
        if role is None or r["role"] == role:
            s = r["s"]
            out += [tuple(s[i:i + 3]) for i in range(0, len(s), 3)]
    return out


class RolesBase(unittest.TestCase):
    def setUp(self):
        self.records = []
        self.roles = tensor_roles.TensorRoles(self.records.append, clock=Clock(),
                                              is_tensor=is_tensor)

    def take(self, role=None):
        out = triples(self.records, role)
        self.records.clear()
        return out


# ------------------------------------------------------------ tensor_roles
class StorageOf(unittest.TestCase):
    def test_untyped_storage_on_2x(self):
        t = Tensor(4096, 64, offset=16)  # a view: its storage's start and size
        self.assertEqual(tensor_roles.storage_of(t), (-1, 4096, 64))

    def test_storage_on_1_13(self):
        t = LegacyTensor(8192, 32)
        self.assertEqual(tensor_roles.storage_of(t), (-1, 8192, 32))
        self.assertEqual(t.storage_calls, 1)

    def test_devices(self):
        self.assertEqual(tensor_roles.storage_of(Tensor(64, 8, Device("cuda", 1))), (1, 64, 8))
        self.assertEqual(tensor_roles.storage_of(Tensor(64, 8, Device("cuda"))), (0, 64, 8))
        self.assertIsNone(tensor_roles.storage_of(Tensor(64, 8, Device("meta"))))
        self.assertIsNone(tensor_roles.storage_of(Tensor(64, 8, Device("mps", 0))))

    def test_empty_storages_are_none(self):
        self.assertIsNone(tensor_roles.storage_of(Tensor(0, 0)))
        self.assertIsNone(tensor_roles.storage_of(Tensor(64, 0)))


class RootForward(RolesBase):
    def test_parameters_buffers_and_inputs(self):
        w, b, running = Tensor(1000, 400), Tensor(2000, 40), Tensor(3000, 40)
        model = Module([w, b], [running, None])
        x, y, z = Tensor(5000, 800), Tensor(6000, 80), Tensor(7000, 8)
        self.roles.root_forward(model, (x, [y, 3], {"mask": z, "n": 1}, "text"))
        self.assertTrue(all(r["time_ns"] == 10 for r in self.records))
        self.assertEqual(triples(self.records, "input"),
                         [(-1, 5000, 800), (-1, 6000, 80), (-1, 7000, 8)])
        self.assertEqual(self.take("parameter"),
                         [(-1, 1000, 400), (-1, 2000, 40), (-1, 3000, 40)])

    def test_unchanged_parameters_are_not_logged_again_moved_ones_are(self):
        w, b = Tensor(1000, 400), Tensor(2000, 40)
        model = Module([w, b])
        self.roles.root_forward(model, ())
        self.take()
        calls = w.storage_calls
        self.roles.root_forward(model, ())
        self.assertEqual(self.take(), [])
        self.assertEqual(w.storage_calls, calls)  # data_ptr() alone decided
        w.move(9000)  # model.to(), load_state_dict into new storage
        self.roles.root_forward(model, ())
        self.assertEqual(self.take(), [(-1, 9000, 400)])

    def test_a_new_tensor_at_a_reused_address_is_logged(self):
        model = Module([Tensor(1000, 400)])
        self.roles.root_forward(model, ())
        self.take()
        model._params = [Tensor(1000, 400)]  # the old one died; its address reused
        self.roles.root_forward(model, ())
        self.assertEqual(self.take(), [(-1, 1000, 400)])

    def test_inputs_are_logged_every_time(self):
        model = Module()
        x = Tensor(5000, 800)
        self.roles.root_forward(model, (x,))
        self.roles.root_forward(model, (x,))
        self.assertEqual(self.take("input"), [(-1, 5000, 800)] * 2)

    def test_shared_storage_is_one_label(self):
        tied = Tensor(1000, 400)
        view = Tensor(1000, 400, offset=100)
        self.roles.root_forward(Module([tied, view]), ())
        self.assertEqual(self.take(), [(-1, 1000, 400)])

    def test_compiled_wrapper_is_looked_through(self):
        inner = Module([Tensor(1000, 400)])
        wrapper = Module()
        wrapper._orig_mod = inner
        self.roles.root_forward(wrapper, ())
        self.assertEqual(self.take(), [(-1, 1000, 400)])

    def test_unreadable_tensors_are_counted_not_raised(self):
        self.roles.root_forward(Module([Broken(1, 1), Tensor(1000, 400)]), ())
        self.assertEqual(self.take(), [(-1, 1000, 400)])
        self.assertEqual(self.roles.unreadable, 1)

    def test_big_models_are_batched(self):
        params = [Tensor(4096 * (i + 1), 64) for i in range(tensor_roles.BATCH + 5)]
        self.roles.root_forward(Module(params), ())
        self.assertEqual([len(r["s"]) // 3 for r in self.records], [tensor_roles.BATCH, 5])
        self.assertEqual(self.roles.labels, tensor_roles.BATCH + 5)


class Gradients(RolesBase):
    def setUp(self):
        super().setUp()
        self.p1, self.p2, self.p3 = Tensor(1000, 40), Tensor(2000, 40), Tensor(3000, 40)
        self.model = Module([self.p1, self.p2, self.p3])

    def test_every_group_at_each_step(self):
        opt = Optimizer([self.p1], [self.p2, self.p3])
        self.p1.grad, self.p3.grad = Tensor(8000, 40), Tensor(9000, 40, Device("cuda", 0))
        for _ in range(2):
            self.roles.optimizer_pre(opt)
            self.assertEqual(self.take("gradient"), [(-1, 8000, 40), (0, 9000, 40)])

    def test_after_backward_only_without_an_optimizer(self):
        self.roles.root_forward(self.model, ())
        self.take()
        self.p2.grad = Tensor(8000, 40)
        self.roles.backward_begin()
        self.roles.backward_begin()   # a nested backward (reentrant checkpoint)
        self.roles.backward_end()
        self.assertEqual(self.take(), [])
        self.roles.backward_end()
        self.assertEqual(self.take("gradient"), [(-1, 8000, 40)])
        self.roles.optimizer_pre(Optimizer([self.p2]))
        self.take()
        self.roles.backward_begin()
        self.roles.backward_end()   # the optimizer's pre-hook logs them from now on
        self.assertEqual(self.take(), [])


class OptimizerState(RolesBase):
    def test_state_tensors_once_each_until_replaced(self):
        p = Tensor(1000, 40)
        opt = Optimizer([p])
        step = Tensor(7000, 4)   # 1.13 Adam's step: a real (CPU) storage, state too
        opt.state[p] = {"step": step, "exp_avg": Tensor(8000, 40), "exp_avg_sq": Tensor(9000, 40),
                        "lr": 0.1, "old_dirs": [Tensor(10000, 40)]}
        self.roles.optimizer_post(opt)
        self.assertEqual(sorted(self.take("optimizer_state")),
                         [(-1, 7000, 4), (-1, 8000, 40), (-1, 9000, 40), (-1, 10000, 40)])
        self.roles.optimizer_post(opt)
        self.assertEqual(self.take(), [])
        opt.state[p]["exp_avg"] = Tensor(11000, 40)   # load_state_dict, a new state
        self.roles.optimizer_post(opt)
        self.assertEqual(self.take(), [(-1, 11000, 40)])

    def test_a_users_state_that_is_not_a_dict(self):
        p = Tensor(1000, 40)
        opt = Optimizer([p])
        opt.state[p] = Tensor(8000, 40)
        self.roles.optimizer_post(opt)
        self.assertEqual(self.take(), [(-1, 8000, 40)])


# ------------------------------------------------------------ the hooks
class Guard:
    def __init__(self):
        self.failures = []

    def failed(self, where, exc, what="its phases"):
        self.failures.append((where, exc))


class Registry:
    def __init__(self):
        self.hooks = []

    def __call__(self, hook, **kwargs):
        self.hooks.append(hook)


def fake_torch_2x():
    """The parts of torch 2.x the forward and optimizer installers use."""
    torch = types.SimpleNamespace()
    mm = types.SimpleNamespace(register_module_forward_pre_hook=Registry(),
                               register_module_forward_hook=Registry())
    torch.nn = types.SimpleNamespace(modules=types.SimpleNamespace(module=mm))
    optmod = types.ModuleType("torch.optim.optimizer")
    optmod.register_optimizer_step_pre_hook = Registry()
    optmod.register_optimizer_step_post_hook = Registry()
    return torch, optmod


class Hooks(unittest.TestCase):
    def setUp(self):
        self.rec = phases.Recorder(clock=Clock())
        self.records = []
        self.roles = tensor_roles.TensorRoles(self.records.append, clock=Clock(),
                                              is_tensor=is_tensor)
        self.guard = Guard()
        self.saved = {k: sys.modules.get(k) for k in ("torch", "torch.optim",
                                                      "torch.optim.optimizer")}

    def tearDown(self):
        for k, v in self.saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v

    def install_optimizer(self, torch, optmod):
        sys.modules["torch.optim.optimizer"] = optmod
        sys.modules.setdefault("torch", types.ModuleType("torch"))
        sys.modules.setdefault("torch.optim", types.ModuleType("torch.optim"))
        return torch_hooks._optimizer(torch, self.rec, self.guard, roles=self.roles)

    def test_root_forwards_only_tell_the_roles(self):
        torch, _ = fake_torch_2x()
        torch_hooks._forward(torch, self.rec, self.guard, roles=self.roles)
        mm = torch.nn.modules.module
        pre, post = mm.register_module_forward_pre_hook.hooks[0], mm.register_module_forward_hook.hooks[0]
        child = Module([Tensor(2000, 40)])
        model = Module([Tensor(1000, 40)])
        x = Tensor(5000, 80)
        for _ in range(2):
            pre(model, (x,))
            pre(child, (Tensor(6000, 8),))   # not a root: no inputs of its own
            post(child, (), None)
            post(model, (), None)
        self.assertEqual(triples(self.records, "parameter"), [(-1, 1000, 40)])
        self.assertEqual(triples(self.records, "input"), [(-1, 5000, 80)] * 2)
        self.assertEqual(self.guard.failures, [])

    def test_optimizer_step_hooks_of_2x(self):
        torch, optmod = fake_torch_2x()
        how = self.install_optimizer(torch, optmod)
        self.assertIn("register_optimizer_step_post_hook", how)
        pre = optmod.register_optimizer_step_pre_hook.hooks[0]
        post = optmod.register_optimizer_step_post_hook.hooks[0]
        p = Tensor(1000, 40)
        p.grad = Tensor(2000, 40)
        opt = Optimizer([p])
        pre(opt, (), {})
        opt.state[p] = {"momentum_buffer": Tensor(3000, 40)}
        post(opt, (), {})
        self.assertEqual(triples(self.records, "gradient"), [(-1, 2000, 40)])
        self.assertEqual(triples(self.records, "optimizer_state"), [(-1, 3000, 40)])
        self.assertEqual([p["kind"] for p in self.rec.snapshot()], ["step", "optimizer"])

    def test_class_step_wrapper_of_1_13(self):
        class BaseOptimizer:
            def __init__(self, params):
                self.param_groups = [{"params": list(params)}]
                self.state = {}

        torch = types.SimpleNamespace(optim=types.SimpleNamespace(Optimizer=BaseOptimizer))
        how = self.install_optimizer(torch, types.ModuleType("torch.optim.optimizer"))
        self.assertIn("per class", how)

        class SGD(BaseOptimizer):
            fail = False

            def step(self):
                if self.fail:
                    raise RuntimeError("nan")
                for p in self.param_groups[0]["params"]:
                    self.state[p] = {"momentum_buffer": Tensor(3000, 40)}

        p = Tensor(1000, 40)
        p.grad = Tensor(2000, 40)
        opt = SGD([p])
        opt.step()
        self.assertEqual(triples(self.records, "gradient"), [(-1, 2000, 40)])
        self.assertEqual(triples(self.records, "optimizer_state"), [(-1, 3000, 40)])
        self.records.clear()
        opt.fail = True
        with self.assertRaises(RuntimeError):   # the user's error reaches the user
            opt.step()
        self.assertEqual(triples(self.records, "optimizer_state"), [])  # no post after a raise

    def test_a_failing_role_never_reaches_the_program(self):
        torch, optmod = fake_torch_2x()
        self.install_optimizer(torch, optmod)
        pre = optmod.register_optimizer_step_pre_hook.hooks[0]
        pre(object(), (), {})   # no param_groups
        self.assertEqual(len(self.guard.failures), 1)
        self.assertIn("tensor roles", self.guard.failures[0][0])


class Config(unittest.TestCase):
    def test_switch(self):
        base = {"MEMSCOPE_OUTPUT_DIR": "/tmp/x"}
        self.assertTrue(config.Config.from_env(base).tensor_roles)
        self.assertTrue(config.Config.from_env(dict(base, MEMSCOPE_TENSOR_ROLES="1")).tensor_roles)
        self.assertFalse(config.Config.from_env(dict(base, MEMSCOPE_TENSOR_ROLES="0")).tensor_roles)
        cfg = config.Config.from_env(dict(base, MEMSCOPE_TENSOR_ROLES="off"))
        self.assertTrue(cfg.tensor_roles)
        self.assertTrue(any("MEMSCOPE_TENSOR_ROLES" in w for w in cfg.warnings))


if __name__ == "__main__":
    unittest.main(verbosity=2)
