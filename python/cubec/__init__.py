"""cubec: a GPU compute runtime on Vulkan, from Python.

The types and calls live in the C extension cubec._cubec (python/src/); this file adds what is
clearer in Python: asyncio support for futures, DLPack import, and the exit hook that closes
devices before the interpreter tears their objects down. docs/python.md maps each call to C.
"""

import atexit as _atexit

from ._cubec import *  # noqa: F401,F403
from ._cubec import _shutdown
from . import _cubec
from .templates import ElementwiseKernel, ReductionKernel, elementwise, reduction  # noqa: F401
from .tracing import load_trace, tracing  # noqa: F401
from .tuning import TuneResult, Tuner  # noqa: F401

__version__ = "%d.%d.%d" % (_cubec.VERSION_MAJOR, _cubec.VERSION_MINOR, _cubec.VERSION_PATCH)

# Devices close before module teardown, so that no buffer or kernel is released into a device
# whose Vulkan objects the loader already unloaded.
_atexit.register(_shutdown)
