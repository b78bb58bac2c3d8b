"""Host memory, asynchronous reads and DLPack, each checked against numpy."""

import asyncio
import threading

import numpy as np
import pytest

import cubec


def test_host_empty_is_a_numpy_array_in_pinned_memory(dev):
    h = cubec.host_empty((64, 3), "float64", device=dev)
    assert isinstance(h, np.ndarray) and h.shape == (64, 3) and h.dtype == np.float64
    h[:] = np.arange(192).reshape(64, 3)
    b = dev.buffer(h)
    np.testing.assert_array_equal(b.numpy(), np.arange(192).reshape(64, 3))
    out = dev.host_empty((64, 3), "float64")
    assert b.read(out=out) is out
    np.testing.assert_array_equal(out, h)


def test_host_empty_defaults_to_the_open_device(dev):
    h = cubec.host_empty(5, "uint8")
    assert h.shape == (5,) and h.dtype == np.uint8


def test_read_async_result_and_done(dev):
    a = np.arange(1 << 16, dtype=np.uint32)
    b = dev.buffer(a)
    f = b.read_async()
    np.testing.assert_array_equal(f.result(timeout=30), a)
    assert f.done()
    out = np.empty_like(a)
    assert b.read_async(out).result() is out


def test_result_timeout_must_be_a_number(dev):
    f = dev.buffer(np.ones(4, np.float32)).read_async()
    with pytest.raises(TypeError, match="timeout must be seconds .* not 'soon'"):
        f.result(timeout="soon")
    np.testing.assert_array_equal(f.result(timeout=30.0), np.ones(4, np.float32))


def test_read_async_out_of_the_wrong_size_is_refused(dev):
    b = dev.empty(4, "float32")
    with pytest.raises(cubec.InvalidArgument, match="out holds 8 bytes"):
        b.read_async(out=np.empty(2, np.float32))


def test_await_a_read(dev):
    a = np.linspace(0, 1, 1000, dtype=np.float32)
    b = dev.buffer(a)

    async def main():
        return await b.read_async()

    np.testing.assert_array_equal(asyncio.run(main()), a)


def test_sync_releases_the_gil(dev, saxpy):
    # Another thread keeps running Python while this one waits in sync().
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)

    t = threading.Thread(target=count)
    t.start()
    b = dev.buffer(np.zeros(1 << 20, np.float32))
    for _ in range(20):
        b.fill(1.0)
        dev.sync()
    stop.set()
    t.join()
    assert len(ticks) > 0


def test_dlpack_exports_synchronised_data(dev):
    a = np.arange(12, dtype=np.int32).reshape(3, 4)
    b = dev.buffer(a)
    assert b.__dlpack_device__() == (1, 0)
    np.testing.assert_array_equal(np.from_dlpack(b), a)
    capsule = b.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(capsule)
    del capsule  # an unconsumed capsule frees its tensor


def test_dlpack_copy_false_and_other_devices_are_refused(dev):
    b = dev.empty(4, "float32")
    # copy=False is refused only where a copy is needed: memory the host cannot see
    # (test_mapping.py forces that case; lavapipe's memory is host-visible).
    if dev.info["unified_memory"]:
        assert "dltensor" in repr(b.__dlpack__(copy=False))  # the mapped bytes
    else:
        with pytest.raises(BufferError, match="copy=False"):
            b.__dlpack__(copy=False)
    with pytest.raises(BufferError, match="dl_device"):
        b.__dlpack__(dl_device=(3, 0))
    # kDLCUDA needs an exportable buffer (test_exportable.py).
    with pytest.raises(BufferError, match="kDLCUDA: the buffer was not made exportable"):
        b.__dlpack__(dl_device=(2, 0))
    with pytest.raises(ValueError, match="stream"):
        b.__dlpack__(stream=1)


def test_from_dlpack_imports_numpy_data(dev):
    a = np.arange(10, dtype=np.float32) * 0.5
    b = cubec.from_dlpack(a, device=dev)
    assert b.dtype == np.float32 and b.shape == (10,)
    np.testing.assert_array_equal(b.numpy(), a)
