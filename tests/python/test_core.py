"""The core of the package: devices, buffers, kernels and launches, each checked against numpy."""

import numpy as np
import pytest

import cubec
from conftest import saxpy_info


def test_devices_lists_the_device_opened(dev):
    names = [d["name"] for d in cubec.devices()]
    assert dev.info["name"] in names


def test_info_has_the_uniform_offset_alignment(dev):
    # Vulkan requires minUniformBufferOffsetAlignment to be a power of two of at most 256.
    align = dev.info["uniform_offset_alignment"]
    assert 1 <= align <= 256 and align & (align - 1) == 0


def test_info_has_the_device_uuid_and_external_handles(dev):
    # Two opens of one physical device share its UUID (docs/multi-device.md); it is 16 bytes.
    uuid = dev.info["device_uuid"]
    assert len(uuid) == 32 and int(uuid, 16) >= 0
    assert uuid in [d["device_uuid"] for d in cubec.devices() if d["name"] == dev.info["name"]]
    assert dev.info["external_handles"] & ~3 == 0


CAPABILITIES = {"pinned_host_memory", "host_import", "vulkan_handles", "reusable_graphs",
                "calibrated_clock", "device_timestamps", "texel_buffers", "images", "wgsl",
                "runs_kernels"}


def check_capabilities(d, backend):
    # cubec_device_info.backend and .capabilities (docs/api.md, "Device capabilities"): names of
    # known bits, and pinned memory (host_empty) exactly where the bit says so.
    info = d.info
    assert info["backend"] == backend
    caps = info["capabilities"]
    assert set(caps) <= CAPABILITIES and len(set(caps)) == len(caps)
    assert ("vulkan_handles" in caps) == (backend == "vulkan")
    assert ("runs_kernels" in caps) == (backend != "null")
    assert ("wgsl" in caps) == (backend == "webgpu")
    if "pinned_host_memory" in caps:
        h = d.host_empty(16, "float32")
        h[:] = np.arange(16, dtype=np.float32)
        np.testing.assert_array_equal(d.buffer(h).numpy(), np.arange(16, dtype=np.float32))
    else:
        with pytest.raises(NotImplementedError, match="cubec_host_alloc"):
            d.host_empty(16, "float32")


def test_info_has_the_backend_and_its_capabilities(dev):
    import os
    check_capabilities(dev, os.environ.get("CUBEC_BACKEND") or "vulkan")
    peeked = [d for d in cubec.devices() if d["name"] == dev.info["name"]]
    assert peeked and peeked[0]["backend"] == dev.info["backend"]
    assert peeked[0]["capabilities"] == dev.info["capabilities"]
    with cubec.Device(backend="null") as null:
        check_capabilities(null, "null")


def test_check_and_sync(dev):
    a = dev.buffer(np.arange(8, dtype=np.int32))
    b = a.copy()
    dev.sync()
    assert dev.check(a, b) is None
    np.testing.assert_array_equal(b.numpy(), np.arange(8, dtype=np.int32))
    with pytest.raises(TypeError, match="argument 1 is not a Buffer"):
        dev.check(a, "b")


def test_buffer_round_trip_keeps_dtype_and_shape(dev):
    a = np.arange(24, dtype=np.int16).reshape(4, 6)
    b = dev.buffer(a)
    assert b.shape == (4, 6) and b.dtype == np.int16 and b.nbytes == a.nbytes
    np.testing.assert_array_equal(b.numpy(), a)


def test_zeros_and_fill(dev):
    z = dev.zeros((3, 5), "int32")
    np.testing.assert_array_equal(z.numpy(), np.zeros((3, 5), np.int32))
    z.fill(-7)
    np.testing.assert_array_equal(z.numpy(), np.full((3, 5), -7, np.int32))
    odd = dev.zeros(7, "uint8")
    np.testing.assert_array_equal(odd.numpy(), np.zeros(7, np.uint8))


def test_read_into_out_and_write_at_offset(dev):
    b = dev.zeros(8, "float32")
    b.write(np.array([1.5, 2.5], np.float32), offset=8)
    out = np.empty(8, np.float32)
    assert b.read(out=out) is out
    expect = np.zeros(8, np.float32)
    expect[2:4] = [1.5, 2.5]
    np.testing.assert_array_equal(out, expect)
    with pytest.raises(cubec.InvalidArgument, match="out holds 16 bytes"):
        b.read(out=np.empty(4, np.float32))


def test_copy_and_copy_to(dev):
    a = dev.buffer(np.arange(16, dtype=np.uint32))
    c = a.copy()
    np.testing.assert_array_equal(c.numpy(), np.arange(16, dtype=np.uint32))
    d = dev.zeros(16, "uint32")
    a.copy_to(d, size=16, src_offset=16, dst_offset=0)
    expect = np.zeros(16, np.uint32)
    expect[:4] = [4, 5, 6, 7]
    np.testing.assert_array_equal(d.numpy(), expect)


def test_copy_to_another_device(dev):
    """Buffer.copy_to a buffer of a second device: cubec_copy_peer, both ways, at offsets."""
    other = cubec.Device(validation=True)
    try:
        n = 100000
        a = dev.buffer(np.arange(n, dtype=np.uint32))
        b = other.zeros(n, "uint32")
        a.copy_to(b, size=4 * (n - 8), src_offset=16, dst_offset=0)
        expect = np.zeros(n, np.uint32)
        expect[: n - 8] = np.arange(4, n - 4, dtype=np.uint32)
        np.testing.assert_array_equal(b.numpy(), expect)
        c = dev.zeros(n, "uint32")
        b.copy_to(c)
        np.testing.assert_array_equal(c.numpy(), expect)
        with pytest.raises(cubec.InvalidArgument, match="size = 6"):
            a.copy_to(b, size=6)
        assert other.validation_messages == 0
    finally:
        other.close()


def test_saxpy_with_a_numpy_record(dev, saxpy):
    n = 1000
    x = np.random.default_rng(1).random(n, dtype=np.float32)
    y = np.random.default_rng(2).random(n, dtype=np.float32)
    bx, by, bz = dev.buffer(x), dev.buffer(y), dev.empty(n)
    saxpy(bx, by, bz, groups=(n + 63) // 64, info=saxpy_info(n, 3.0))
    np.testing.assert_allclose(bz.numpy(), 3.0 * x + y, rtol=1e-6)
    assert saxpy.bindings == 3 and saxpy.info_size == 8 and saxpy.access == ("r", "r", "w")


def test_layout_as_written_gap_extra_buffer_and_uniform(dev):
    # Binding 1 is a gap, binding 2 a uniform block; a fourth buffer is past the layout.
    src = """#version 450
layout(local_size_x = 64) in;
layout(std430, binding = 0) readonly buffer A { uint a[]; };
layout(std140, binding = 2) uniform U { uint mul; uint add; } u;
layout(std430, binding = 3) writeonly buffer C { uint c[]; };
void main() { uint i = gl_GlobalInvocationID.x; c[i] = a[i] * u.mul + u.add; }
"""
    k = dev.kernel(glsl=src, name="layout")
    assert k.bindings == 4 and k.access == ("r", None, "r", "w")
    a = np.arange(128, dtype=np.uint32)
    ba, gap, extra = dev.buffer(a), dev.empty(4, "uint32"), dev.empty(4, "uint32")
    ub, bc = dev.buffer(np.array([3, 5, 0, 0], dtype=np.uint32)), dev.empty(128, "uint32")
    k(ba, gap, ub, bc, extra, groups=2)
    np.testing.assert_array_equal(bc.numpy(), a * 3 + 5)


def test_saxpy_with_bytes_and_a_stream(dev, saxpy):
    n = 100
    x = np.arange(n, dtype=np.float32)
    bx, by, bz = dev.buffer(x), dev.buffer(x), dev.empty(n)
    s = dev.stream()
    saxpy(bx, by, bz, groups=2, info=saxpy_info(n, -1.0).tobytes(), stream=s)
    s.sync()
    np.testing.assert_allclose(bz.numpy(stream=s), np.zeros(n, np.float32))


def test_bound_launch_and_new_info(dev, saxpy):
    n = 256
    x = np.linspace(0, 1, n, dtype=np.float32)
    bx, by, bz = dev.buffer(x), dev.buffer(np.ones(n, np.float32)), dev.empty(n)
    launch = saxpy.bind(bx, by, bz, groups=(4, 1, 1), info=saxpy_info(n, 2.0))
    launch()
    np.testing.assert_allclose(bz.numpy(), 2.0 * x + 1.0, rtol=1e-6)
    launch(info=saxpy_info(n, 5.0))
    np.testing.assert_allclose(bz.numpy(), 5.0 * x + 1.0, rtol=1e-6)
    del bx, by  # the launch keeps its buffers alive
    launch()
    np.testing.assert_allclose(bz.numpy(), 2.0 * x + 1.0, rtol=1e-6)


def test_defines_and_spec_constants(dev):
    src = """#version 450
layout(local_size_x = 1) in;
layout(constant_id = 0) const uint SCALE = 1;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = gl_GlobalInvocationID.x * SCALE + OFFSET; }
"""
    k = dev.kernel(glsl=src, defines={"OFFSET": 10}, spec={0: 3})
    out = dev.empty(8, "uint32")
    k(out, groups=8)
    np.testing.assert_array_equal(out.numpy(), np.arange(8, dtype=np.uint32) * 3 + 10)


def test_workgroup_and_shared_memory_from_spec(dev):
    """A workgroup size (local_size_x_id) and a shared array (BLOCK * 2) set by spec constants:
    workgroup_size and shared_memory_size report the values given, and the grid sized from them
    covers the output (each element its workgroup's sum of 2 * BLOCK ones)."""
    src = """#version 450
layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint BLOCK = 32;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
shared uint tmp[BLOCK * 2u];
void main() {
    uint t = gl_LocalInvocationID.x;
    tmp[t] = 1u; tmp[t + BLOCK] = 1u;
    barrier();
    uint s = 0u;
    for (uint i = 0u; i < 2u * BLOCK; i++) s += tmp[i];
    o[gl_GlobalInvocationID.x] = s + 1000u * gl_WorkGroupID.x;
}
"""
    for block in (16, 64):
        k = dev.kernel(glsl=src, spec={0: block})
        assert k.workgroup_size == (block, 1, 1)
        assert k.shared_memory_size == 4 * 2 * block
        out = dev.empty(256, "uint32")
        k(out, groups=256 // k.workgroup_size[0])
        want = 2 * block + 1000 * (np.arange(256, dtype=np.uint32) // block)
        np.testing.assert_array_equal(out.numpy(), want)


def test_errors_are_the_class_of_their_code(dev, saxpy):
    b = dev.empty(4)
    with pytest.raises(cubec.InvalidArgument, match="takes 3 buffers") as e:
        saxpy(b, b, groups=1, info=saxpy_info(4, 1.0))
    assert isinstance(e.value, ValueError) and e.value.code == 1
    with pytest.raises(cubec.CompileFailed, match="broken"):
        dev.kernel(glsl="#version 450\nvoid main() { broken }", name="broken")
    with pytest.raises(TypeError, match="not a cubec.Buffer"):
        saxpy(b, b, 3, groups=1)
    with pytest.raises(TypeError, match="unexpected keyword"):
        saxpy(b, b, b, groups=1, colour=2)


def test_error_classes_follow_the_c_list():
    names = {c.code_name: c for c in vars(cubec).values()
             if isinstance(c, type) and issubclass(c, cubec.Error) and c is not cubec.Error}
    assert names["CUBEC_OUT_OF_MEMORY"] is cubec.OutOfMemory
    assert names["CUBEC_TIMEOUT"] is cubec.Timeout and issubclass(cubec.Timeout, TimeoutError)
    assert sorted(c.code for c in names.values()) == list(range(1, len(names) + 1))


OUT_OF_BOUNDS = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main() { o[gl_GlobalInvocationID.x] = 0xdeadbeefu; }
"""


def test_robust_device_keeps_writes_in_bounds():
    with cubec.Device(robust=True, validation=True) as d:
        assert d.info["robust"] in ("page", "buffer")
        guard = d.zeros(256, "uint32")  # after the small buffer in its page, most likely
        small = d.zeros(4, "uint32")
        d.kernel(glsl=OUT_OF_BOUNDS)(small, groups=4)  # 256 invocations into 4 elements
        np.testing.assert_array_equal(small.numpy(), np.full(4, 0xDEADBEEF, np.uint32))
        if d.info["robust"] == "buffer":
            np.testing.assert_array_equal(guard.numpy(), np.zeros(256, np.uint32))
        assert d.validation_messages == 0
