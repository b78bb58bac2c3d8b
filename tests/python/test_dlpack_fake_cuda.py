"""The kDLCUDA DLPack export on lavapipe, through a stand-in libcuda (tests/interop/fake_cuda_maps.c)
whose "device pointers" are host mappings of the exported memory: the capsule's tensor (pointer,
device, shape, dtype, flags), its pointer being the buffer's very bytes, the capsule keeping the
mapping past the buffer object and a device close, the unmap at the end, copy=True, the consumer
stream's encodings, and the handoff's refusal where the device cannot export its timeline.

Each case runs in a child process: the CUDA driver is loaded once per process, and the other
tests must see no CUDA. The library's path comes from ctest (CUBEC_TEST_FAKE_CUDA); without it
the test is skipped by name."""

import os
import subprocess
import sys
import textwrap

import pytest

FAKE = os.environ.get("CUBEC_TEST_FAKE_CUDA")

# The child's shared part: a device, the fake's counters, and DLPack's structs read by ctypes
# (what a consumer such as PyTorch reads).
PRELUDE = """
import ctypes, gc, sys
import numpy as np
import cubec

fake = ctypes.CDLL(sys.argv[1])
dev = cubec.Device(validation=True)

class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]

class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]

class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.c_void_p), ("byte_offset", ctypes.c_uint64)]

class Versioned(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32),
                ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p),
                ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]

class Legacy(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", ctypes.c_void_p)]

get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
get_pointer.restype = ctypes.c_void_p
get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

def tensor_of(capsule):
    name = b"dltensor_versioned" if "versioned" in repr(capsule) else b"dltensor"
    kind = Versioned if name == b"dltensor_versioned" else Legacy
    return kind.from_address(get_pointer(capsule, name))

def bytes_at(ptr, n):
    return ctypes.string_at(ptr, n)
"""


def run_child(body):
    if not FAKE:
        pytest.skip("test_dlpack_fake_cuda: CUBEC_TEST_FAKE_CUDA is not set (ctest sets it)")
    import cubec

    with cubec.Device() as d:
        uuid = d.info["device_uuid"]
    env = dict(os.environ, CUBEC_CUDA_LIBRARY=FAKE, FAKE_CUDA_UUID=uuid)
    code = PRELUDE + textwrap.dedent(body) + "\nprint('CHILD OK')\n"
    r = subprocess.run([sys.executable, "-c", code, FAKE], env=env, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0 and "CHILD OK" in r.stdout, r.stdout + r.stderr


def test_kdlcuda_capsule_is_the_buffers_memory():
    run_child("""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = dev.buffer(a, exportable=True)
    m = b.cuda_map()
    assert m["cuda_device"] == 0 and m["size"] == 48, m
    assert b.__dlpack_device__() == (2, 0)
    assert b.cuda_map() == m  # one mapping per buffer
    # stream=-1: the consumer asks for no synchronisation (the handoff is the next test's).
    cap = b.__dlpack__(stream=-1, max_version=(1, 0))
    t = tensor_of(cap)
    assert (t.major, t.minor, t.flags) == (1, 0, 0)
    d = t.dl_tensor
    assert d.data == m["device_ptr"] and (d.device.device_type, d.device.device_id) == (2, 0)
    assert d.ndim == 2 and [d.shape[0], d.shape[1]] == [3, 4] and not d.strides
    assert (d.dtype.code, d.dtype.bits, d.dtype.lanes) == (2, 32, 1) and d.byte_offset == 0
    dev.sync()
    assert bytes_at(d.data, 48) == a.tobytes()  # the pointer is the buffer's bytes
    # The consumer writes through the pointer; cubec reads it.
    ctypes.memmove(d.data, np.full(12, 7, np.float32).tobytes(), 48)
    np.testing.assert_array_equal(b.numpy(), np.full((3, 4), 7, np.float32))
    legacy = tensor_of(b.__dlpack__(stream=-1))
    assert legacy.dl_tensor.data == m["device_ptr"] and legacy.dl_tensor.device.device_type == 2
    """)


def test_capsule_keeps_the_mapping_past_the_buffer_and_the_close():
    run_child("""
    b = dev.buffer(np.arange(256, dtype=np.int32), exportable=True)
    keep = dev.buffer(np.arange(4, dtype=np.int32), exportable=True)
    keep.cuda_map()
    assert fake.fake_cuda_live_imports() == 1
    cap = b.__dlpack__(stream=-1)  # maps b
    assert fake.fake_cuda_live_imports() == 2
    ptr = tensor_of(cap).dl_tensor.data
    del b
    gc.collect()
    assert fake.fake_cuda_live_imports() == 2  # the capsule holds the buffer and its mapping
    dev.close()
    assert dev.closed  # at once for callers; the memory stays until the capsule goes
    assert fake.fake_cuda_context_releases() == 0
    assert bytes_at(ptr, 1024) == np.arange(256, dtype=np.int32).tobytes()
    del keep
    gc.collect()
    assert fake.fake_cuda_live_imports() == 1  # a buffer's collection unmaps it
    del cap  # the deleter: the buffer goes (unmapped), then the deferred close runs
    gc.collect()
    assert fake.fake_cuda_live_imports() == 0
    assert fake.fake_cuda_context_releases() == 1
    """)


def test_copy_and_the_consumer_stream_encodings():
    run_child("""
    b = dev.buffer(np.arange(64, dtype=np.int32), exportable=True)
    ptr = b.cuda_map()["device_ptr"]
    cap = b.__dlpack__(stream=-1, copy=True, max_version=(1, 0))
    t = tensor_of(cap)
    assert t.flags == 2 and t.dl_tensor.data != ptr  # IS_COPIED, a buffer of its own
    dev.sync()
    assert bytes_at(t.dl_tensor.data, 256) == np.arange(64, dtype=np.int32).tobytes()
    for bad, kind in ((0, ValueError), (-2, ValueError), ("s", TypeError)):
        try:
            b.__dlpack__(stream=bad)
        except kind as e:
            assert "stream" in str(e), e
        else:
            raise AssertionError("stream=%r accepted" % (bad,))
    try:
        b.__dlpack__(dl_device=(2, 1), stream=-1)
    except BufferError as e:
        assert "dl_device (2, 1) asked, but the buffer is on CUDA device 0" in str(e), e
    else:
        raise AssertionError("another ordinal accepted")
    # kDLCPU on request still works, without a stream.
    assert tensor_of(b.__dlpack__(dl_device=(1, 0))).dl_tensor.device.device_type == 1
    """)


def test_handoff_is_refused_by_name_without_an_exportable_timeline():
    run_child("""
    if dev.info["external_handles"] & 2:
        print("the device exports its timeline: the handoff is tested on a CUDA GPU")
    else:
        b = dev.buffer(np.arange(8, dtype=np.float32), exportable=True)
        for stream in (None, 1, 2, 12345):
            try:
                b.__dlpack__(stream=stream)
            except cubec.Unsupported as e:
                assert "timeline" in str(e), e
            else:
                raise AssertionError("a handoff without a timeline was accepted")
        for handoff in (dev.cuda_wait_stream, dev.stream_wait_cuda):
            try:
                handoff(None)
            except cubec.Unsupported as e:
                assert "timeline" in str(e).lower(), e
            else:
                raise AssertionError("%s without a timeline was accepted" % handoff.__name__)
        del b
        gc.collect()
        dev.close()  # no hold was left behind by the refused exports: the close runs now
        assert fake.fake_cuda_context_releases() == 1 and fake.fake_cuda_live_imports() == 0
    """)
