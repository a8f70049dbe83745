"""The environment contract with `memscope-cli record`: the MEMSCOPE_* variables
read here (and MEMSCOPE_HOOK in sitecustomize.py) are record_env.h's
kHookVariables, which tests/contracts/record_env_test.py checks."""
import os

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


def parse_steps(text):
    """"A:B" -> (A, B) with 0 <= A <= B; "A" -> (A, A); None if malformed."""
    parts = text.split(":")
    try:
        if len(parts) == 1:
            first = last = int(parts[0])
        elif len(parts) == 2:
            first, last = int(parts[0]), int(parts[1])
        else:
            return None
    except ValueError:
        return None
    if first < 0 or last < first:
        return None
    return first, last


class Config:
    def __init__(self, output_dir, max_entries=DEFAULT_MAX_ENTRIES, capture_library=None,
                 rank=-1, local_rank=-1, warnings=(), steps=None, nvtx_range=None, ring=False,
                 signal_ack_fd=-1, module_depth=DEFAULT_MODULE_DEPTH, module_backward=False,
                 tensor_roles=True):
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
            try:
                max_entries = int(raw)
                if max_entries <= 0:
                    raise ValueError
            except ValueError:
                max_entries = DEFAULT_MAX_ENTRIES
                warnings.append("MEMSCOPE_HISTORY_MAX_ENTRIES=%r is not a positive integer; using %d"
                                % (raw, DEFAULT_MAX_ENTRIES))
        steps = None
        raw = env.get("MEMSCOPE_STEPS", "")
        if raw:
            steps = parse_steps(raw)
            if steps is None:
                warnings.append("MEMSCOPE_STEPS=%r is not FIRST:LAST (step numbers from 0); "
                                "recording every step" % raw)
        nvtx_range = None
        raw = env.get("MEMSCOPE_CAPTURE_RANGE", "")
        if raw:
            if raw.startswith("nvtx:") and len(raw) > len("nvtx:"):
                nvtx_range = raw[len("nvtx:"):]
            else:
                warnings.append("MEMSCOPE_CAPTURE_RANGE=%r is not nvtx:NAME; recording the whole "
                                "run" % raw)
        module_depth = DEFAULT_MODULE_DEPTH
        raw = env.get("MEMSCOPE_MODULE_DEPTH", "")
        if raw:
            try:
                module_depth = int(raw)
                if module_depth < 0:
                    raise ValueError
            except ValueError:
                module_depth = DEFAULT_MODULE_DEPTH
                warnings.append("MEMSCOPE_MODULE_DEPTH=%r is not a number of levels (0 = off); "
                                "using %d" % (raw, DEFAULT_MODULE_DEPTH))
        tensor_roles = True
        raw = env.get("MEMSCOPE_TENSOR_ROLES", "")
        if raw == "0":
            tensor_roles = False
        elif raw not in ("", "1"):
            warnings.append("MEMSCOPE_TENSOR_ROLES=%r is not 0 or 1; recording tensor roles"
                            % raw)
        return cls(output_dir=os.path.abspath(out),
                   tensor_roles=tensor_roles,
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
