"""Refused arguments: each raises an exception naming the argument and its value, and the
objects stay usable afterwards (checked against numpy)."""

import os
import tempfile

import numpy as np
import pytest

import cubec
from conftest import saxpy_info


def test_device_index_and_name(dev):
    with pytest.raises(cubec.InvalidArgument, match="device index -1"):
        cubec.Device(-1)
    with pytest.raises(cubec.NotFound, match="no-such-gpu"):
        cubec.Device("no-such-gpu")
    with pytest.raises(TypeError, match="device must be an index, a name or None"):
        cubec.Device(1.5)
    named = cubec.Device(dev.info["name"][:5])
    assert named.info["name"] == dev.info["name"]
    named.close()


def test_shapes_and_dtypes(dev):
    with pytest.raises(ValueError, match=r"shape must hold ints >= 0, got -3 at index 1"):
        dev.empty((2, -3))
    with pytest.raises(TypeError, match="shape must be an int or a sequence"):
        dev.empty(None)
    with pytest.raises(TypeError):
        dev.empty(4, "no-such-dtype")
    with pytest.raises(TypeError, match="needs a shape"):
        dev.zeros()


@pytest.mark.parametrize("make", ["empty", "zeros", "host_empty", "module.host_empty"])
def test_shape_and_dtype_by_position_or_keyword(dev, make):
    """Device.empty/zeros/host_empty and cubec.host_empty merge positions and keywords alike."""
    fn = getattr(cubec, "host_empty") if make.startswith("module.") else getattr(dev, make)
    who = make.replace("module.", "") if make.startswith("module.") else "Device." + make
    for got in (fn((2, 3), "int32"), fn(shape=(2, 3), dtype="int32"), fn((2, 3), dtype="int32")):
        assert tuple(got.shape) == (2, 3) and np.dtype(got.dtype) == np.int32
    with pytest.raises(TypeError, match=rf"{who}\(\) takes at most 2 positional arguments"):
        fn(4, "float32", None)
    with pytest.raises(TypeError, match=rf"{who}\(\) got 'shape' twice"):
        fn(4, shape=4)
    with pytest.raises(TypeError, match=rf"{who}\(\) got 'dtype' twice"):
        fn(4, "float32", dtype="float32")
    with pytest.raises(TypeError, match=rf"{who}\(\) needs a shape"):
        fn(dtype="float32")
    with pytest.raises(TypeError, match=rf"{who}\(\) got an unexpected keyword argument 'shap'"):
        fn(shap=4)


def test_launch_arguments(dev, saxpy):
    n = 64
    x = np.ones(n, np.float32)
    a, b, c = dev.buffer(x), dev.buffer(x), dev.empty(n)
    info = saxpy_info(n, 1.0)
    with pytest.raises(cubec.InvalidArgument, match="groups= is required"):
        saxpy(a, b, c, info=info)
    with pytest.raises(cubec.InvalidArgument, match=r"groups \(1, 2, 3, 4\) must hold 1 to 3"):
        saxpy(a, b, c, groups=(1, 2, 3, 4), info=info)
    with pytest.raises(cubec.InvalidArgument, match="groups -1 is not a uint32"):
        saxpy(a, b, c, groups=-1, info=info)
    with pytest.raises(TypeError, match="info must be bytes, a numpy record or array, or a dict, "
                       "not 3.5"):
        saxpy(a, b, c, groups=1, info=3.5)
    with pytest.raises(cubec.InvalidArgument, match="info"):
        saxpy(a, b, c, groups=1, info=b"\0" * 4)
    with pytest.raises(TypeError, match="stream must be a cubec.Stream or None, not 7"):
        saxpy(a, b, c, groups=1, info=info, stream=7)
    other = cubec.Device()
    try:
        with pytest.raises(cubec.InvalidArgument, match="belongs to another device"):
            saxpy(a, b, c, groups=1, info=info, stream=other.stream())
        with pytest.raises(cubec.InvalidArgument, match="buffer 1 belongs to another device"):
            saxpy(a, other.empty(n), c, groups=1, info=info)
    finally:
        other.close()
    with pytest.raises(TypeError, match="a bound launch takes only info="):
        saxpy.bind(a, b, c, groups=1, info=info)(groups=2)
    saxpy(a, b, c, groups=1, info=info)  # still usable
    np.testing.assert_array_equal(c.numpy(), 2 * x)


def test_kernel_sources(dev):
    with pytest.raises(cubec.InvalidArgument, match=r"exactly one of glsl=, spirv= and path= \(got 0\)"):
        dev.kernel()
    with pytest.raises(cubec.InvalidArgument, match=r"\(got 2\)"):
        dev.kernel(glsl="x", spirv=b"\0" * 4)
    with pytest.raises(cubec.InvalidArgument, match="spirv holds 6 bytes"):
        dev.kernel(spirv=b"\0" * 6)
    with pytest.raises(cubec.InvalidSpirv):
        dev.kernel(spirv=b"\0" * 8)
    with pytest.raises(TypeError, match="defines must be a dict"):
        dev.kernel(glsl="#version 450\nvoid main() {}", defines=["A"])
    with pytest.raises(cubec.InvalidArgument, match="spec constant 0 = 4294967296 does not fit"):
        dev.kernel(glsl="#version 450\nvoid main() {}", spec={0: 1 << 32})
    with pytest.raises(FileNotFoundError):
        dev.kernel(path="/nonexistent/kernel.comp")


def test_kernel_from_a_file(dev):
    src = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = 7u * gl_GlobalInvocationID.x; }
"""
    fd, path = tempfile.mkstemp(suffix=".comp")
    try:
        with os.fdopen(fd, "w") as f:
            f.write(src)
        k = dev.kernel(path=path)
    finally:
        os.remove(path)
    assert k.name == path
    out = dev.empty(5, "uint32")
    k(out, groups=5)
    np.testing.assert_array_equal(out.numpy(), 7 * np.arange(5, dtype=np.uint32))


def test_transfer_arguments(dev):
    b = dev.zeros(4, "float32")
    with pytest.raises(cubec.InvalidArgument, match="offset must be an int >= 0, got -4"):
        b.write(np.ones(1, np.float32), offset=-4)
    with pytest.raises(cubec.InvalidArgument):
        b.write(np.ones(8, np.float32))  # past the end: cubec names the range
    with pytest.raises(cubec.InvalidArgument, match="elements of 8 bytes"):
        dev.zeros(4, "float64").fill(1.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'strem'"):
        b.numpy(strem=None)
    np.testing.assert_array_equal(b.numpy(), np.zeros(4, np.float32))


def test_host_empty_needs_a_device():
    with pytest.raises(cubec.InvalidArgument, match="no device is open"):
        cubec.host_empty(4)
    with pytest.raises(TypeError, match="device must be a cubec.Device, not 3"):
        cubec.host_empty(4, device=3)


def test_odd_arguments_are_refused_by_name(dev):
    with pytest.raises(cubec.InvalidArgument, match="holds Python objects"):
        dev.buffer(np.array([object()]))
    with pytest.raises(cubec.InvalidArgument, match="holds Python objects"):
        dev.empty(4, object)
    with pytest.raises(TypeError, match="path must be a str, bytes or os.PathLike, not 0"):
        dev.kernel(path=0)  # open() would read file descriptor 0
    b = dev.empty(4)
    with pytest.raises(TypeError, match="max_version must be a tuple"):
        b.__dlpack__(max_version="1.0")
    with pytest.raises(TypeError, match="dl_device must be a tuple"):
        b.__dlpack__(dl_device=1)


def test_a_value_by_position_and_by_keyword_is_refused(dev, saxpy):
    """read, read_async, Future.result, Device.sync and Graph.replay take their one argument by
    position or by keyword; given both ways it is refused, neither silently dropped."""
    n = 64
    x = np.arange(n, dtype=np.float32)
    a, b, c = dev.buffer(x), dev.buffer(x), dev.empty(n)
    s = dev.stream()
    with dev.capture(s) as g:
        saxpy(a, b, c, groups=1, info=saxpy_info(n, 2.0), stream=s)
    out = np.zeros(n, np.float32)
    future = a.read_async()
    calls = [
        ("Buffer.read", "out", lambda: a.read(out, out=out), lambda: a.read(out, None)),
        ("Buffer.read_async", "out", lambda: a.read_async(out, out=out),
         lambda: a.read_async(out, None)),
        ("Future.result", "timeout", lambda: future.result(5.0, timeout=5.0),
         lambda: future.result(5.0, None)),
        ("Device.sync", "stream", lambda: dev.sync(s, stream=s), lambda: dev.sync(s, None)),
        ("replay", "stream", lambda: g.replay(s, stream=s), lambda: g.replay(s, None)),
    ]
    for who, name, both_ways, too_many in calls:
        with pytest.raises(TypeError, match=rf"{who}\(\) got '{name}' twice"):
            both_ways()
        with pytest.raises(TypeError, match=rf"{who}\(\) takes at most 1 positional argument"):
            too_many()
    # Each still works with its argument given one way, checked against numpy.
    g.replay(stream=s)
    dev.sync(s)
    np.testing.assert_array_equal(future.result(timeout=5.0), x)
    np.testing.assert_array_equal(a.read(out=out), x)
    np.testing.assert_array_equal(c.read(), 2.0 * x + x)
