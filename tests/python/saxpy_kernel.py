"""The SAXPY kernel (z = alpha * x + y over 3 buffers, 8 bytes of metadata) and its metadata
record: the kernel of the Python tests (conftest.py) and of the binding's launch-cost bench
(bench/python_bench.py), defined once so that the bench measures the launch the tests check.
numpy only: the bench imports it without pytest."""

import numpy as np

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
