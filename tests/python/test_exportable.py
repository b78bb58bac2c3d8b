"""Exportable buffers (exportable=True) and the DLPack export's choice between kDLCUDA and
kDLCPU where CUDA is absent (lavapipe here): today's kDLCPU behaviour is kept, and every kDLCUDA
request is refused with cubec's reason. The kDLCUDA export itself runs in test_dlpack_cuda.py
(PyTorch on a CUDA GPU) and, here, through a stand-in libcuda in test_dlpack_fake_cuda.py."""

import numpy as np
import pytest

import cubec
from saxpy_kernel import saxpy_info


def cuda_absent(buf):
    """Skips the test by name where CUDA maps the buffer (the refusals below assume it cannot)."""
    try:
        buf.cuda_map()
    except cubec.Unsupported:
        return
    pytest.skip("test_exportable: libcuda maps buffers here; test_dlpack_cuda.py covers it")


def test_exportable_buffers_hold_and_move_data(dev, saxpy):
    n = 1000
    x = np.arange(n, dtype=np.float32)
    bx = dev.buffer(x, exportable=True)
    by = dev.zeros(n, np.float32, exportable=True)
    bz = dev.empty(n, np.float32, exportable=True)
    plain = dev.empty(n, np.float32)
    assert bx.exportable and by.exportable and bz.exportable and not plain.exportable
    saxpy(bx, by, bz, groups=(n + 63) // 64, info=saxpy_info(n, 2.0))
    np.testing.assert_array_equal(bz.numpy(), 2.0 * x)
    assert not bz.copy().exportable  # a copy is an ordinary buffer


def test_exportable_argument_is_checked(dev):
    with pytest.raises(TypeError, match="Device.empty: exportable must be True or False, got 1"):
        dev.empty(4, exportable=1)
    with pytest.raises(TypeError, match="Device.buffer: exportable must be True or False"):
        dev.buffer(np.zeros(4, np.float32), exportable="yes")
    with pytest.raises(cubec.InvalidArgument, match="size 0 holds no memory to export"):
        dev.zeros(0, exportable=True)


def test_without_cuda_an_exportable_buffer_exports_as_kdlcpu(dev):
    b = dev.buffer(np.arange(12, dtype=np.int32).reshape(3, 4), exportable=True)
    cuda_absent(b)
    assert b.__dlpack_device__() == (1, 0)
    view = np.from_dlpack(b)
    np.testing.assert_array_equal(view, np.arange(12, dtype=np.int32).reshape(3, 4))
    with pytest.raises(ValueError, match="stream must be None for kDLCPU, got 5"):
        b.__dlpack__(stream=5)


def test_without_cuda_kdlcuda_requests_are_refused_with_the_reason(dev):
    b = dev.empty(16, np.float32, exportable=True)
    cuda_absent(b)
    with pytest.raises(BufferError, match="cannot export as kDLCUDA: cubec_cuda_map: CUDA") as e:
        b.__dlpack__(dl_device=(2, 0))
    assert isinstance(e.value.__cause__, cubec.Unsupported)
    with pytest.raises(cubec.Unsupported, match="cubec_cuda_map: CUDA interop"):
        b.cuda_map()
    with pytest.raises(cubec.Unsupported, match="cubec_cuda_wait_stream: CUDA interop"):
        dev.cuda_wait_stream(None)
    with pytest.raises(cubec.Unsupported, match="cubec_stream_wait_cuda"):
        dev.stream_wait_cuda(None)


def test_kdlcuda_of_a_buffer_not_exportable_is_refused_by_name(dev):
    b = dev.empty(16, np.float32)
    with pytest.raises(BufferError, match="the buffer was not made exportable"):
        b.__dlpack__(dl_device=(2, 0), copy=True)
    with pytest.raises(cubec.InvalidArgument, match="Buffer.cuda_map: the buffer was not made"):
        b.cuda_map()
    assert b.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match=r"dl_device \(3, 0\); only kDLCPU"):
        b.__dlpack__(dl_device=(3, 0))


def test_cuda_stream_arguments_are_checked(dev):
    with pytest.raises(TypeError, match="Device.cuda_wait_stream: cuda_stream must be None"):
        dev.cuda_wait_stream("x")
    with pytest.raises(cubec.InvalidArgument, match="cuda_stream must be a handle >= 0, got -3"):
        dev.cuda_wait_stream(-3)
    with pytest.raises(TypeError, match="Device.stream_wait_cuda: cuda_stream must be None"):
        dev.stream_wait_cuda(1.5)
