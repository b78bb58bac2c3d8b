"""DLPack as kDLCUDA between cubec and PyTorch on one CUDA GPU (issue 25 point 4): a kernel of
cubec writes an exportable buffer, torch.from_dlpack views it on a torch stream without a copy
(the tensor's pointer is the buffer's CUDA mapping) and reads cubec's values after the stream
handoff alone (the torch stream waits on the GPU, cubec_cuda_wait_stream: no host sync before
torch reads), then torch writes the tensor and cubec reads it back after the reverse handoff.

Skipped by name where torch, its CUDA device or libcuda's mapping of cubec buffers is absent
(lavapipe on the development machine). On the H200 it runs under the torch venv's Python with the
extension built on the development machine (abi3: the same file loads in 3.11 and 3.12):

    . .gl/vk-setup.sh
    PYTHONPATH=build/python /opt/torch/.venv/bin/python tests/python/test_dlpack_cuda.py

or under pytest (`-m pytest tests/python/test_dlpack_cuda.py`) where the venv has pytest."""

import gc
import os
import sys

import numpy as np

import cubec

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

try:
    import pytest
except ImportError:  # the torch venv may lack pytest: main() below runs the tests then
    pytest = None


class Skipped(Exception):
    pass


STANDALONE = False  # main() sets it: skips are then reported without pytest


def skip(reason):
    if pytest is not None and not STANDALONE:
        pytest.skip(reason)
    raise Skipped(reason)


# A slow kernel on purpose: ITERS steps of a 32-bit LCG per element, so that cubec's write is still
# running when torch's stream would read without the GPU-side wait (a missing wait shows as
# zeros). Wrapping uint arithmetic, stored as int (torch's int32 ops are complete, uint32's not).
LCG = """#version 450
layout(local_size_x = 256) in;
layout(set = 0, binding = 0) readonly buffer X { int x[]; };
layout(set = 0, binding = 1) writeonly buffer Z { int z[]; };
CUBEC_INFO(uint n; uint iters;)
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= info.n) return;
    uint v = uint(x[i]);
    for (uint k = 0u; k < info.iters; k++) v = v * 1664525u + 1013904223u;
    z[i] = int(v);
}
"""
A, C = 1664525, 1013904223
N = 1 << 22
ITERS = 1 << 17


def lcg_reference(x, iters):
    """The kernel's result: the LCG step composed `iters` times is one affine map mod 2^32."""
    a, c = 1, 0
    for _ in range(iters):
        a, c = (a * A) % 2**32, (c * A + C) % 2**32
    v = (x.astype(np.uint64) & np.uint64(0xFFFFFFFF)) * np.uint64(a) + np.uint64(c)
    return (v & np.uint64(0xFFFFFFFF)).astype(np.uint32).view(np.int32)


def torch_with_cuda():
    try:
        import torch
    except ImportError:
        skip("test_dlpack_cuda: torch is not installed for this Python")
    if not torch.cuda.is_available():
        skip("test_dlpack_cuda: torch sees no CUDA device")
    return torch


def cuda_device():
    """The cubec device, where CUDA maps its exportable buffers (else skipped, with the reason)."""
    dev = cubec.Device()
    probe = dev.empty(4, "int32", exportable=True)
    try:
        probe.cuda_map()
    except cubec.Error as e:
        dev.close()
        skip("test_dlpack_cuda: CUDA cannot map cubec buffers here (%s)" % e)
    return dev


def to_int32(v):
    return (np.asarray(v, np.int64) & 0xFFFFFFFF).astype(np.uint32).view(np.int32)


def test_torch_views_cubec_memory_and_hands_it_back():
    torch = torch_with_cuda()
    dev = cuda_device()
    rng = np.random.default_rng(5)
    x = rng.integers(-(2**31), 2**31 - 1, N, dtype=np.int64).astype(np.int32)
    expect = lcg_reference(x, ITERS)
    kernel = dev.kernel(glsl=LCG, name="lcg")
    bx = dev.buffer(x)
    bz = dev.zeros(N, "int32", exportable=True)
    dev.sync()  # z holds zeros: a read before the kernel's write would show them
    kernel(bx, bz, groups=(N + 255) // 256, info={"n": N, "iters": ITERS})  # queued, not waited

    assert bz.__dlpack_device__() == (2, torch.cuda.current_device())
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        # torch passes s as stream=: s waits on the GPU for the kernel. No sync of any kind here.
        t = torch.from_dlpack(bz)
        seen = (t * 1).cpu().numpy()  # a torch kernel on s reads cubec's values, then the copy
    mapping = bz.cuda_map()
    assert t.device.type == "cuda" and t.dtype == torch.int32 and tuple(t.shape) == (N,)
    assert t.data_ptr() == mapping["device_ptr"], "the tensor is not the buffer's memory"
    np.testing.assert_array_equal(seen, expect)

    # torch writes (after a GPU-side delay on s, so a missing handoff would read the old values),
    # cubec reads after the reverse handoff.
    with torch.cuda.stream(s):
        torch.cuda._sleep(50_000_000)
        t.mul_(3).add_(7)
    dev.stream_wait_cuda(s)  # cubec's stream waits on the GPU for s: no host sync either way
    after = to_int32(expect.astype(np.int64) * 3 + 7)
    np.testing.assert_array_equal(bz.numpy(), after)

    # The default stream: torch passes 1 (CUDA's legacy stream).
    kernel(bx, bz, groups=(N + 255) // 256, info={"n": N, "iters": 1})
    t1 = torch.from_dlpack(bz)
    np.testing.assert_array_equal(t1.cpu().numpy(), lcg_reference(x, 1))
    assert t1.data_ptr() == mapping["device_ptr"]

    # copy=True: a new exportable buffer, its own pointer, the same values.
    with torch.cuda.stream(s):
        tc = torch.utils.dlpack.from_dlpack(bz.__dlpack__(stream=s.cuda_stream, copy=True))
        copied = tc.cpu().numpy()
    assert tc.data_ptr() != mapping["device_ptr"]
    np.testing.assert_array_equal(copied, lcg_reference(x, 1))

    # The capsule keeps the buffer's memory mapped past the buffer object and the device's
    # close (deferred until the tensor goes).
    del bz, t1, tc
    gc.collect()
    dev.close()
    assert dev.closed
    with torch.cuda.stream(s):
        np.testing.assert_array_equal(t.cpu().numpy(), lcg_reference(x, 1))
    del t
    gc.collect()  # the deleter ran: the device is closed now


def test_kdlcuda_refusals_on_a_cuda_device():
    torch = torch_with_cuda()
    dev = cuda_device()
    try:
        plain = dev.empty(16, "float32")
        assert plain.__dlpack_device__() == (1, 0)  # not exportable: kDLCPU as before
        exp = dev.empty(16, "float32", exportable=True)
        ordinal = exp.__dlpack_device__()[1]
        for bad in (0, -2, "x"):
            try:
                exp.__dlpack__(stream=bad)
            except (ValueError, TypeError):
                pass
            else:
                raise AssertionError("stream=%r was accepted" % (bad,))
        try:
            exp.__dlpack__(dl_device=(2, ordinal + 1))
        except BufferError as e:
            assert "on CUDA device %d" % ordinal in str(e)
        else:
            raise AssertionError("a kDLCUDA export to another ordinal was accepted")
        # dl_device=(kDLCPU, 0) still gives host bytes (a copy of device-local memory).
        assert "dltensor" in repr(exp.__dlpack__(dl_device=(1, 0)))
        del torch
    finally:
        dev.close()


def main():
    global STANDALONE
    STANDALONE = True
    failed = 0
    for name, fn in sorted(globals().items()):
        if name.startswith("test_") and callable(fn):
            try:
                fn()
                print("PASS", name)
            except Skipped as e:
                print("SKIP", name, "-", e)
            except Exception:  # noqa: BLE001 - report every failure, then exit non-zero
                import traceback

                traceback.print_exc()
                print("FAIL", name)
                failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
