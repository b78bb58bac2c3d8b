"""Fixtures of the Python tests: a device with the Khronos validation layer on (any message
fails the test, as in the C tests) and the shared kernels. Run by ctest (test_python) with the
build tree's package on PYTHONPATH."""

import numpy as np
import pytest

import cubec

SAXPY = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) readonly buffer Y { float y[]; };
layout(set = 0, binding = 2) writeonly buffer Z { float z[]; };
CUBEC_INFO(uint n; float alpha;)
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) z[i] = info.alpha * x[i] + y[i];
}
"""

SAXPY_INFO = np.dtype([("n", "<u4"), ("alpha", "<f4")])


def saxpy_info(n, alpha):
    """The metadata record of SAXPY."""
    return np.array([(n, alpha)], dtype=SAXPY_INFO)[0]


@pytest.fixture
def dev():
    d = cubec.Device(validation=True)
    yield d
    messages = d.validation_messages
    d.close()
    assert messages == 0, "the validation layer reported %d message(s)" % messages


@pytest.fixture
def saxpy(dev):
    return dev.kernel(glsl=SAXPY, name="saxpy")
