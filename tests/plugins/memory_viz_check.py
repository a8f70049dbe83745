"""Runs PyTorch's own memory_viz module (torch.cuda._memory_viz) over a snapshot
that memscope exported and checks that it sees one trace list per device.
usage: memory_viz_check.py FILE EXPECTED_DEVICE_TRACES
Exits 77 when torch.cuda._memory_viz cannot be imported."""
import io
import pickle
import sys
from contextlib import redirect_stdout

try:
    from torch.cuda import _memory_viz as viz
except Exception as e:  # torch missing or broken: nothing to check against
    print(f"torch.cuda._memory_viz unavailable: {e}")
    sys.exit(77)


def no_flamegraph(lines, flamegraph_script=None):
    # memory_viz would download flamegraph.pl to draw an svg: hand back the
    # folded lines it would have drawn instead.
    return lines


def main():
    path, devices = sys.argv[1], int(sys.argv[2])
    with open(path, "rb") as f:
        snap = pickle.load(f)
    traces = snap["device_traces"]
    assert isinstance(traces, list), type(traces)
    assert len(traces) == devices, f"{len(traces)} device_traces lists, expected {devices}"
    assert all(isinstance(t, list) for t in traces)
    segs = snap["segments"]
    seen = set()
    # torch 1.13 takes the list of segments; 2.x the whole snapshot dict.
    for fn in ("stats", "segments", "memory"):
        f = getattr(viz, fn, None)
        if f is None:
            continue
        kwargs = {} if fn == "stats" else {"format_flamegraph": no_flamegraph}
        try:
            out = f(segs, **kwargs)
        except (TypeError, KeyError, AttributeError):
            out = f(snap, **kwargs)
        if fn == "stats":
            assert out["segments"] == len(segs), out
        seen.add(fn)
    if hasattr(viz, "trace"):  # 2.1+: a text dump of device_traces, per device
        buf = io.StringIO()
        with redirect_stdout(buf):
            text = viz.trace(snap)
        text = text if isinstance(text, str) else buf.getvalue()
        for i, t in enumerate(traces):
            if t:
                assert f"Device {i}" in text, f"memory_viz.trace does not show device {i}"
        seen.add("trace")
    if hasattr(viz, "segsum"):
        viz.segsum(snap)
        seen.add("segsum")
    assert seen, "memory_viz offers none of the functions this check knows"
    print(f"ok: memory_viz {sorted(seen)} over {len(segs)} segments, "
          f"{len(traces)} device lists {[len(t) for t in traces]}")


if __name__ == "__main__":
    main()
