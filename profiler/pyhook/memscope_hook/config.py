"""The environment contract with `memscope-cli record`."""
import os

DEFAULT_MAX_ENTRIES = 1000000


class ConfigError(Exception):
    pass


def _int_env(env, name, default):
    try:
        return int(env.get(name, ""))
    except ValueError:
        return default


class Config:
    def __init__(self, output_dir, max_entries=DEFAULT_MAX_ENTRIES, capture_library=None,
                 rank=-1, local_rank=-1, warnings=()):
        self.output_dir = output_dir
        self.max_entries = max_entries
        self.capture_library = capture_library
        self.rank = rank
        self.local_rank = local_rank
        self.warnings = list(warnings)

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
        return cls(output_dir=os.path.abspath(out),
                   max_entries=max_entries,
                   capture_library=env.get("MEMSCOPE_TORCH_CAPTURE_LIBRARY") or None,
                   # The launcher's process group identity (torchrun sets these).
                   rank=_int_env(env, "RANK", -1),
                   local_rank=_int_env(env, "LOCAL_RANK", -1),
                   warnings=warnings)

    def process_dir(self, pid):
        return os.path.join(self.output_dir, ".memscope-hook", str(pid))
