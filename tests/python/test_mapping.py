"""Zero-copy host views (cubec_buffer_map, docs/python.md "Views and copies"): buf.numpy() as a
view where the buffer's memory is host-visible (lavapipe: always), a copy elsewhere (forced here
with CUBEC_FORCE_STAGING, a discrete GPU's path), copy=True/False, __dlpack__ of the mapped bytes
consumed by numpy.from_dlpack, memoryview(buf), and the lifetime of a view: it outlives the
Buffer object, and a Device.close() while it lives waits for it. Every result is checked against
numpy."""

import ctypes
import gc
import os

import numpy as np
import pytest

import cubec
from conftest import SAXPY, saxpy_info


def staging_device():
    """A device whose buffers are not host-visible (as a discrete GPU's device-local memory)."""
    os.environ["CUBEC_FORCE_STAGING"] = "1"
    try:
        return cubec.Device(validation=True)
    finally:
        del os.environ["CUBEC_FORCE_STAGING"]


def mapping_of(a):
    """The cubec.Mapping at the end of an array's base chain (numpy puts a memoryview between)."""
    o = a
    while o is not None and not isinstance(o, cubec.Mapping):
        o = getattr(o, "base", None) if isinstance(o, np.ndarray) else getattr(o, "obj", None)
    return o


def versioned_tensor(capsule):
    """(data pointer, flags) of a DLManagedTensorVersioned capsule (dlpack.h 1.x: version 8 bytes,
    manager_ctx, deleter, flags, then the DLTensor whose first member is data)."""
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    p = get(capsule, b"dltensor_versioned")
    flags = ctypes.c_uint64.from_address(p + 24).value
    data = ctypes.c_void_p.from_address(p + 32).value
    return data, flags


def test_numpy_is_a_view_that_sees_launches_and_feeds_them(dev, saxpy):
    n = 1000
    x = dev.buffer(np.arange(n, dtype=np.float32))
    y = dev.buffer(np.ones(n, np.float32))
    z = dev.empty(n, "float32")
    saxpy(x, y, z, groups=(n + 63) // 64, info=saxpy_info(n, 2.0))
    v = z.numpy()  # waits for the launch
    assert isinstance(mapping_of(v), cubec.Mapping)
    assert v.dtype == np.float32 and v.shape == (n,)
    expect = 2.0 * np.arange(n, dtype=np.float32) + 1.0
    np.testing.assert_array_equal(v, expect)
    # A host write through the view is read by the next launch.
    xv = x.numpy()
    xv[:] = -np.arange(n, dtype=np.float32)
    saxpy(x, y, z, groups=(n + 63) // 64, info=saxpy_info(n, 3.0))
    dev.sync()  # GPU writes after the map are ordered by sync, as with CUDA managed memory
    np.testing.assert_array_equal(v, -3.0 * np.arange(n, dtype=np.float32) + 1.0)
    np.testing.assert_array_equal(z.numpy(copy=True), v)


def test_view_keeps_dtype_and_shape_and_copy_true_copies(dev):
    a = np.arange(24, dtype=np.int16).reshape(2, 3, 4)
    b = dev.buffer(a)
    v = b.numpy()
    c = b.numpy(copy=True)
    assert v.shape == (2, 3, 4) and v.dtype == np.int16 and v.flags.writeable
    np.testing.assert_array_equal(v, a)
    np.testing.assert_array_equal(c, a)
    v[1, 2, 3] = 999
    assert c[1, 2, 3] == 23  # the copy is the program's own
    np.testing.assert_array_equal(b.read(), np.where(a == 23, 999, a))
    assert b.numpy(copy=False)[1, 2, 3] == 999


def test_view_outlives_the_buffer_object(dev):
    b = dev.buffer(np.arange(256, dtype=np.uint32))
    v = b.numpy()
    del b
    gc.collect()
    np.testing.assert_array_equal(v, np.arange(256, dtype=np.uint32))
    v += 1  # still the buffer's memory, kept alive by the view
    np.testing.assert_array_equal(v, np.arange(1, 257, dtype=np.uint32))
    del v
    gc.collect()


def test_device_close_waits_for_a_live_view():
    d = cubec.Device(validation=True)
    b = d.buffer(np.full(64, 7.0, np.float32))
    v = b.numpy()
    del b
    d.close()
    # Closed for every call; the memory stays until the last view goes, with the bytes as they
    # were at the close.
    assert d.closed
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        d.empty(4)
    np.testing.assert_array_equal(v, np.full(64, 7.0, np.float32))
    v[:] = 1.0
    assert float(v.sum()) == 64.0
    del v
    gc.collect()  # the device really closes here
    assert d.validation_messages == 0


def test_dlpack_hands_out_the_mapped_bytes(dev):
    a = np.arange(12, dtype=np.float64).reshape(3, 4)
    b = dev.buffer(a)
    assert b.__dlpack_device__() == (1, 0)
    got = np.from_dlpack(b)
    np.testing.assert_array_equal(got, a)
    b.write(np.array([42.0]))  # zero-copy: the consumer sees the buffer's bytes
    assert got[0, 0] == 42.0
    # The versioned capsule: the mapped bytes' address, not flagged IS_COPIED; copy=True is.
    view = b.numpy()
    data, flags = versioned_tensor(b.__dlpack__(copy=False, max_version=(1, 0)))
    assert data == view.ctypes.data and not flags & 2
    data, flags = versioned_tensor(b.__dlpack__(copy=True, max_version=(1, 0)))
    assert data != view.ctypes.data and flags & 2
    del got, view
    # The capsule keeps the buffer alive after its object goes.
    b2 = dev.buffer(np.arange(5, dtype=np.int32))
    kept = np.from_dlpack(b2)
    del b2
    gc.collect()
    np.testing.assert_array_equal(kept, np.arange(5, dtype=np.int32))


def test_dlpack_waits_for_queued_work(dev, saxpy):
    n = 256
    x = dev.buffer(np.full(n, 2.0, np.float32))
    z = dev.empty(n, "float32")
    saxpy(x, x, z, groups=n // 64, info=saxpy_info(n, 5.0))
    np.testing.assert_array_equal(np.from_dlpack(z), np.full(n, 12.0, np.float32))


def test_memoryview_where_host_visible(dev):
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = dev.buffer(a)
    m = memoryview(b)
    assert m.format == "f" and m.shape == (2, 3) and not m.readonly
    np.testing.assert_array_equal(np.asarray(m), a)
    np.testing.assert_array_equal(np.asarray(b), a)  # numpy takes the protocol too
    m.release()


def test_staging_device_copies_and_refuses_copy_false():
    d = staging_device()
    a = np.arange(32, dtype=np.int32)
    b = d.buffer(a)
    v = b.numpy()
    np.testing.assert_array_equal(v, a)
    v[:] = 0  # a copy: the buffer is unchanged
    np.testing.assert_array_equal(b.read(), a)
    with pytest.raises(BufferError, match="copy=False"):
        b.numpy(copy=False)
    with pytest.raises(BufferError, match="copy=False"):
        b.__dlpack__(copy=False)
    np.testing.assert_array_equal(np.from_dlpack(b), a)  # a synchronised copy
    with pytest.raises(BufferError, match="not host-visible"):
        memoryview(b)
    del b, v
    messages = d.validation_messages
    d.close()
    assert messages == 0


def test_numpy_of_a_failed_buffer_raises():
    # The device's first submission is lost (CUBEC_FAULT): the launch's output carries the failure.
    os.environ["CUBEC_FAULT"] = "submit:1"
    try:
        d = cubec.Device()
    finally:
        del os.environ["CUBEC_FAULT"]
    k = d.kernel(glsl=SAXPY)
    x = d.buffer(np.ones(64, np.float32))
    z = d.empty(64, "float32")
    k(x, x, z, groups=1, info=saxpy_info(64, 1.0))
    with pytest.raises(cubec.Error):
        d.sync()
    with pytest.raises(cubec.Error, match="map"):
        z.numpy()
    with pytest.raises(cubec.Error, match="map"):
        np.from_dlpack(z)
    np.testing.assert_array_equal(x.numpy(), np.ones(64, np.float32))  # untouched: mapped
    d.close()


def test_views_of_empty_buffers_and_views_of_dtype(dev):
    e = dev.empty((0, 3), "float64")
    v = e.numpy()
    assert v.shape == (0, 3) and v.dtype == np.float64
    rec = np.dtype([("a", "<u4"), ("b", "<f4")])
    r = dev.buffer(np.array([(1, 2.0), (3, 4.0)], dtype=rec))
    rv = r.numpy()
    assert rv.dtype == rec and rv["a"].tolist() == [1, 3] and rv["b"].tolist() == [2.0, 4.0]
