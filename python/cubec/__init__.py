"""cubec: a GPU compute runtime on Vulkan, from Python.

The types and calls live in the C extension cubec._cubec (python/src/); this file adds what is
clearer in Python: asyncio support for futures, DLPack import, and the exit hook that closes
devices before the interpreter tears their objects down. docs/python.md maps each call to C.
"""

import atexit as _atexit

from ._cubec import *  # noqa: F401,F403
from ._cubec import _shutdown
from . import _cubec



def _future_await(self):
    """`await future`: polls done() between event-loop turns, backing off from 20 us to 1 ms,
    so that no Python code runs on cubec's threads and no thread is spent waiting."""
    import asyncio

    pause = 2e-5
    while not self.done():
        yield from asyncio.sleep(pause).__await__()
        pause = min(pause * 2, 1e-3)
    return self.result()


Future.__await__ = _future_await  # noqa: F405


def from_dlpack(x, device=None, stream=None):
    """A cubec.Buffer holding a copy of a DLPack producer's kDLCPU data (numpy, PyTorch CPU
    tensors...), dtype and shape kept; `device` defaults to the first device still open."""
    import numpy

    arr = numpy.from_dlpack(x)
    if device is None:
        device = _cubec._default_device()
    return device.buffer(arr, stream=stream)


__version__ = "%d.%d.%d" % (_cubec.VERSION_MAJOR, _cubec.VERSION_MINOR, _cubec.VERSION_PATCH)

# Devices close before module teardown, so that no buffer or kernel is released into a device
# whose Vulkan objects the loader already unloaded.
_atexit.register(_shutdown)
