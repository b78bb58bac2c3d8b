"""Traces from Python: switching cubec's Chrome trace on for the devices a block opens, and
reading the file back.

cubec records a trace when ``CUBEC_TRACE`` (or ``[profiling] trace`` in cubec.ini) names a file
at device open, and writes the file whole at each device close (docs/profiling.md). So:

    with cubec.tracing("trace.json"):
        with cubec.Device() as dev:
            ...
    events = cubec.load_trace("trace.json")      # the trace's events, as dicts

Open the file in https://ui.perfetto.dev to see it.
"""

import os

__all__ = ["tracing", "load_trace"]


class tracing:
    """Devices opened inside the block record a trace into `path` (written at their close).

    Sets CUBEC_TRACE for the block's duration and restores the previous value after, so
    devices opened before or after are not traced. The variable is process-wide: devices opened
    by other threads meanwhile are traced too. (A class rather than contextlib's decorator, so
    that `import cubec` does not import contextlib.)"""

    def __init__(self, path):
        self.path = os.fspath(path)
        self._before = None

    def __enter__(self):
        self._before = os.environ.get("CUBEC_TRACE")
        os.environ["CUBEC_TRACE"] = self.path
        return self.path

    def __exit__(self, *exc):
        if self._before is None:
            os.environ.pop("CUBEC_TRACE", None)
        else:
            os.environ["CUBEC_TRACE"] = self._before
        return False


def load_trace(path):
    """The events of a cubec trace file (Chrome trace-event format), as a list of dicts."""
    import json  # here, not at `import cubec`

    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data["traceEvents"] if isinstance(data, dict) else data
