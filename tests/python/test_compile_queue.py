"""The compile queue from Python (dev.compile_queue, q.kernel, k.wait): kernels queued in a
block compile in parallel and run correctly after it, checked against numpy."""

import numpy as np
import pytest

import cubec

SCALE = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
CUBEC_INFO(uint n;)
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) y[i] = FACTOR * x[i];
}
"""

N = 300


def run(k, x, y):
    k(x, y, groups=((N + 63) // 64, 1, 1), info=np.array([N], np.uint32).tobytes())


def test_kernels_queued_in_a_block_run_after_it(dev):
    xs = np.linspace(-1, 1, N, dtype=np.float32)
    x, y = dev.buffer(xs), dev.empty(N, np.float32)
    with dev.compile_queue() as q:
        kernels = {f: q.kernel(glsl=SCALE, defines={"FACTOR": f"{f}.0"}, name=f"scale{f}")
                   for f in range(1, 6)}
    for f, k in kernels.items():
        assert k.bindings == 2 and k.info_size == 4
        run(k, x, y)
        np.testing.assert_array_equal(y.numpy(), np.float32(f) * xs)


def test_a_queued_kernel_launched_inside_the_block_waits_for_itself(dev):
    xs = np.arange(N, dtype=np.float32)
    x, y = dev.buffer(xs), dev.empty(N, np.float32)
    with dev.compile_queue() as q:
        k = q.kernel(glsl=SCALE, defines={"FACTOR": "3.0"})
        run(k, x, y)  # waits for k alone, then launches
        np.testing.assert_array_equal(y.numpy(), 3 * xs)
        k2 = q.kernel(glsl=SCALE, defines={"FACTOR": "4.0"})
        k2.wait()
        assert k2.bindings == 2
    k.wait()  # a no-op once ready


def test_the_exit_raises_the_first_compile_error_and_the_kernel_keeps_it(dev):
    with pytest.raises(cubec.CompileFailed, match="broken"):
        with dev.compile_queue() as q:
            good = q.kernel(glsl=SCALE, defines={"FACTOR": "2.0"})
            bad = q.kernel(glsl=SCALE.replace("FACTOR * x[i]", "x[i] +* 1"), name="broken")
    x, y = dev.buffer(np.ones(N, np.float32)), dev.empty(N, np.float32)
    run(good, x, y)
    np.testing.assert_array_equal(y.numpy(), np.full(N, 2, np.float32))
    with pytest.raises(cubec.CompileFailed, match="broken"):
        run(bad, x, y)
    with pytest.raises(cubec.CompileFailed):
        bad.wait()


def test_bad_queue_use_is_refused(dev):
    q = dev.compile_queue()
    with pytest.raises(cubec.InvalidArgument, match="not open"):
        q.kernel(glsl=SCALE)
    with q:
        with pytest.raises(cubec.InvalidArgument, match="exactly one of glsl= and path="):
            q.kernel()
        with pytest.raises(TypeError, match="defines must be a dict"):
            q.kernel(glsl=SCALE, defines=["FACTOR"])


def test_queued_kernels_take_info_as_a_dict(dev):
    # A queued kernel learns its metadata members when its compilation is done, like one from
    # dev.kernel, so info= by member name works at its first launch and after the block.
    xs = np.arange(N, dtype=np.float32)
    x, y = dev.buffer(xs), dev.empty(N, np.float32)
    with dev.compile_queue() as q:
        early = q.kernel(glsl=SCALE, defines={"FACTOR": "5.0"})
        late = q.kernel(glsl=SCALE, defines={"FACTOR": "6.0"})
        early(x, y, groups=((N + 63) // 64, 1, 1), info={"n": N})
        np.testing.assert_array_equal(y.numpy(), 5 * xs)
    late(x, y, groups=((N + 63) // 64, 1, 1), info={"n": N})
    np.testing.assert_array_equal(y.numpy(), 6 * xs)
    del early, late
