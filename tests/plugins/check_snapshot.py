"""Loads a snapshot with CPython's pickle under an Unpickler that refuses every
global (so nothing in the file can run code) and checks the snapshot's shape.
usage: check_snapshot.py FILE EXPECTED_TRACE_ENTRIES [EXPECTED_DEVICE_TRACES]"""
import pickle
import sys


class Restricted(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"global {module}.{name} refused")


def main():
    path, entries = sys.argv[1], int(sys.argv[2])
    with open(path, "rb") as f:
        snap = Restricted(f).load()
    assert isinstance(snap, dict), type(snap)
    for key in ("segments", "device_traces"):
        assert key in snap, f"missing {key}"
    n = 0
    for trace in snap["device_traces"]:
        for e in trace:
            for key in ("action", "size", "stream", "frames"):
                assert key in e, f"entry without {key}: {e}"
            for fr in e["frames"]:
                assert set(fr) == {"name", "filename", "line"}, fr
            n += 1
    assert n == entries, f"{n} trace entries, expected {entries}"
    if len(sys.argv) > 3:
        lists = len(snap["device_traces"])
        assert lists == int(sys.argv[3]), f"{lists} device_traces lists, expected {sys.argv[3]}"
    for seg in snap["segments"]:
        for key in ("device", "address", "total_size", "stream", "blocks", "segment_type"):
            assert key in seg, f"segment without {key}"
        for b in seg["blocks"]:
            for key in ("address", "size", "requested_size", "state", "frames"):
                assert key in b, f"block without {key}"
    print(f"ok: {len(snap['segments'])} segments, {n} trace entries")


if __name__ == "__main__":
    main()
