"""The environment contract with `memscope-cli record`: the MEMSCOPE_* variables
read here (and MEMSCOPE_HOOK in sitecustomize.py) are record_env.h's
kHookVariables, which tests/contracts/record_env_test.py checks."""
import os
import re

DEFAULT_MAX_ENTRIES = 1000000
DEFAULT_MODULE_DEPTH = 6  # record's default for --module-depth (modules.DEFAULT_DEPTH)


class ConfigError(Exception):
    pass


def _int_env(env, name, default):
    try:
        return int(env.get(name, ""))
    except ValueError:
        return default


# Where launchers put a process's rank and local rank, in the order they are
# trusted: torchrun's, Slurm's (srun), Open MPI's, then MPICH / Intel MPI's.
RANK_VARIABLES = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK")
LOCAL_RANK_VARIABLES = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "MPI_LOCALRANKID")


# A rank is an int32 on disk (hook.json, the trace): larger is refused, not cut.
MAX_RANK = 2**31 - 1


def _first_int_env(env, names, warnings):
    """The first of `names` that holds a number, else -1. A number out of
    0..MAX_RANK is refused with a warning (-1), never narrowed into another
    rank."""
    for name in names:
        value = _int_env(env, name, None)
        if value is not None:
            if not 0 <= value <= MAX_RANK:
                warnings.append("%s=%r is not a rank (0 to %d); the rank is left unknown"
                                % (name, env.get(name), MAX_RANK))
                return -1
            return value
    return -1


# The one validation of the environment the hook reads, the same rules as
# core/recording's hook_env.h (what `record` and the merge check); both are
# tested against tests/contracts/hook_env_cases.json. Numbers are ASCII
# digits only (int() would also take a sign, spaces, '_' and other scripts'
# digits) and fit an int32.
INT32_MAX = 2**31 - 1
MAX_MODULE_DEPTH = 256
_DIGITS = re.compile(r"[0-9]{1,10}")


def _number(text):
    if not _DIGITS.fullmatch(text):
        return None
    n = int(text)
    return n if n <= INT32_MAX else None


def parse_steps(text):
    """"A:B" -> (A, B) with 0 <= A <= B <= INT32_MAX; "A" -> (A, A); None if malformed."""
    first_text, colon, last_text = text.partition(":")
    first = _number(first_text)
    last = _number(last_text) if colon else first
    if first is None or last is None or last < first:
        return None
    return first, last


def parse_history_entries(text):
    n = _number(text)
    return n if n is not None and n > 0 else None


def parse_module_depth(text):
    n = _number(text)
    return n if n is not None and n <= MAX_MODULE_DEPTH else None


def parse_capture_range(text):
    if text.startswith("nvtx:") and len(text) > len("nvtx:"):
        return text[len("nvtx:"):]
    return None


def parse_tensor_roles(text):
    return {"0": False, "1": True}.get(text)


OPS_MODES = ("auto", "dispatch", "frames", "off")


def parse_ops(text):
    return text if text in OPS_MODES else None


MAX_APPLY_PATH_BYTES = 4096  # hook_env.h's kMaxHookApplyPathBytes


def parse_apply(text):
    """MEMSCOPE_APPLY: the apply plan's absolute path (record --apply writes it)."""
    if (not text.startswith("/") or text == "/" or "\0" in text
            or len(text.encode("utf-8", "surrogateescape")) > MAX_APPLY_PATH_BYTES):
        return None
    return text


def check_variable(name, value):
    """The canonical text of `value` for the variable `name` ("3:4", "6",
    "nvtx:NAME", "1"), or None where it is refused (hook_env.h's
    checkHookVariable)."""
    if name == "MEMSCOPE_STEPS":
        steps = parse_steps(value)
        return None if steps is None else "%d:%d" % steps
    if name == "MEMSCOPE_HISTORY_MAX_ENTRIES":
        n = parse_history_entries(value)
        return None if n is None else str(n)
    if name == "MEMSCOPE_MODULE_DEPTH":
        n = parse_module_depth(value)
        return None if n is None else str(n)
    if name == "MEMSCOPE_CAPTURE_RANGE":
        name_ = parse_capture_range(value)
        return None if name_ is None else "nvtx:" + name_
    if name == "MEMSCOPE_TENSOR_ROLES":
        roles = parse_tensor_roles(value)
        return None if roles is None else ("1" if roles else "0")
    if name == "MEMSCOPE_OPS":
        return parse_ops(value)
    if name == "MEMSCOPE_APPLY":
        return parse_apply(value)
    return None


class Config:
    def __init__(self, output_dir, max_entries=DEFAULT_MAX_ENTRIES, capture_library=None,
                 rank=-1, local_rank=-1, warnings=(), steps=None, nvtx_range=None, ring=False,
                 signal_ack_fd=-1, module_depth=DEFAULT_MODULE_DEPTH, module_backward=False,
                 tensor_roles=True, idle=False, ops="auto", apply_plan=None,
                 apply_problem=None):
        self.output_dir = output_dir
        self.max_entries = max_entries
        self.capture_library = capture_library
        self.rank = rank
        self.local_rank = local_rank
        self.warnings = list(warnings)
        self.steps = steps              # (first, last) step numbers, or None: all
        self.nvtx_range = nvtx_range    # the NVTX range name that switches recording on
        self.ring = ring                # keep only the last max_entries (no dump before wrap)
        self.signal_ack_fd = signal_ack_fd
        self.module_depth = module_depth        # module levels recorded; 0: no module scopes
        self.module_backward = module_backward  # backward scopes (global backward hooks, 2.0+)
        self.tensor_roles = tensor_roles        # log what parameters, gradients, state, inputs are
        self.ops = ops          # "auto", "dispatch", "frames" or "off": how ops are recorded (ops.py)
        self.idle = idle        # attachable, recording nothing until a window opens (attach)
        self.apply_plan = apply_plan        # MEMSCOPE_APPLY: the apply plan's path (apply.py)
        self.apply_problem = apply_problem  # why MEMSCOPE_APPLY was refused (the apply fails)
        self.late = False       # made in a running program (memscope.attachable()/start())

    @property
    def gated(self):
        """The history is switched on only for part of the run."""
        return self.steps is not None or self.nvtx_range is not None

    def capture_document(self):
        """What hook.json says about the part of the run that was recorded."""
        if self.steps is not None:
            return {"steps": list(self.steps)}
        if self.nvtx_range is not None:
            return {"nvtx": self.nvtx_range}
        return None

    @classmethod
    def from_env(cls, env=None):
        env = os.environ if env is None else env
        out = env.get("MEMSCOPE_OUTPUT_DIR", "")
        if not out:
            raise ConfigError("MEMSCOPE_OUTPUT_DIR is not set")
        warnings = []
        max_entries = DEFAULT_MAX_ENTRIES
        raw = env.get("MEMSCOPE_HISTORY_MAX_ENTRIES", "")
        if raw:
            max_entries = parse_history_entries(raw)
            if max_entries is None:
                max_entries = DEFAULT_MAX_ENTRIES
                warnings.append("MEMSCOPE_HISTORY_MAX_ENTRIES=%r is not a number of entries from 1 "
                                "to %d; using %d" % (raw, INT32_MAX, DEFAULT_MAX_ENTRIES))
        steps = None
        raw = env.get("MEMSCOPE_STEPS", "")
        if raw:
            steps = parse_steps(raw)
            if steps is None:
                warnings.append("MEMSCOPE_STEPS=%r is not FIRST:LAST (step numbers from 0 to "
                                "%d); recording every step" % (raw, INT32_MAX))
        nvtx_range = None
        raw = env.get("MEMSCOPE_CAPTURE_RANGE", "")
        if raw:
            nvtx_range = parse_capture_range(raw)
            if nvtx_range is None:
                warnings.append("MEMSCOPE_CAPTURE_RANGE=%r is not nvtx:NAME; recording the whole "
                                "run" % raw)
        module_depth = DEFAULT_MODULE_DEPTH
        raw = env.get("MEMSCOPE_MODULE_DEPTH", "")
        if raw:
            module_depth = parse_module_depth(raw)
            if module_depth is None:
                module_depth = DEFAULT_MODULE_DEPTH
                warnings.append("MEMSCOPE_MODULE_DEPTH=%r is not a number of levels from 0 (off) "
                                "to %d; using %d" % (raw, MAX_MODULE_DEPTH, DEFAULT_MODULE_DEPTH))
        idle = False
        raw = env.get("MEMSCOPE_IDLE", "")
        if raw == "1":
            idle = True
            if steps is not None or nvtx_range is not None:
                warnings.append("MEMSCOPE_IDLE=1 with a capture range: the range is ignored; "
                                "windows are opened by memscope-cli attach")
                steps = nvtx_range = None
        elif raw not in ("", "0"):
            warnings.append("MEMSCOPE_IDLE=%r is not 0 or 1; recording the whole run" % raw)
        tensor_roles = True
        raw = env.get("MEMSCOPE_TENSOR_ROLES", "")
        if raw and parse_tensor_roles(raw) is not None:
            tensor_roles = parse_tensor_roles(raw)
        elif raw:
            warnings.append("MEMSCOPE_TENSOR_ROLES=%r is not 0 or 1; recording tensor roles"
                            % raw)
        ops = "auto"
        raw = env.get("MEMSCOPE_OPS", "")
        if raw and parse_ops(raw) is not None:
            ops = raw
        elif raw:
            warnings.append("MEMSCOPE_OPS=%r is not auto, dispatch, frames or off; using auto" % raw)
        apply_plan = apply_problem = None
        raw = env.get("MEMSCOPE_APPLY", "")
        if raw:
            apply_plan = parse_apply(raw)
            if apply_plan is None:
                # Not a warning alone: a policy asked for and not applied is
                # refused visibly (apply.py), never run as a plain job quietly.
                apply_problem = "MEMSCOPE_APPLY=%r is not an absolute path" % raw
                warnings.append(apply_problem)
        return cls(output_dir=os.path.abspath(out), apply_plan=apply_plan,
                   apply_problem=apply_problem,
                   tensor_roles=tensor_roles, idle=idle, ops=ops,
                   module_depth=module_depth,
                   module_backward=env.get("MEMSCOPE_MODULE_BACKWARD", "") == "1",
                   steps=steps, nvtx_range=nvtx_range,
                   ring=env.get("MEMSCOPE_HISTORY_RING", "") == "1",
                   signal_ack_fd=_int_env(env, "MEMSCOPE_SIGNAL_ACK_FD", -1),
                   max_entries=max_entries,
                   capture_library=env.get("MEMSCOPE_TORCH_CAPTURE_LIBRARY") or None,
                   # The launcher's process group identity: torchrun's, else
                   # Slurm's or an MPI launcher's (srun / mpirun without torchrun).
                   rank=_first_int_env(env, RANK_VARIABLES, warnings),
                   local_rank=_first_int_env(env, LOCAL_RANK_VARIABLES, warnings),
                   warnings=warnings)

    def process_dir(self, pid):
        return os.path.join(self.output_dir, ".memscope-hook", str(pid))
