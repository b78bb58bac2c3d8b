"""CuPy-style templates (cubec.elementwise, cubec.reduction): each generated kernel's result is
checked against numpy, on sizes that are not multiples of the workgroup."""

import numpy as np
import pytest

import cubec


@pytest.mark.parametrize("n", [1, 127, 128, 1000, 100_003])
def test_elementwise_add_matches_numpy(dev, n):
    add = cubec.elementwise("float x, float y", "float z", "z = x + y", name="add")
    rng = np.random.default_rng(n)
    x = rng.standard_normal(n).astype(np.float32)
    y = rng.standard_normal(n).astype(np.float32)
    z = add(dev.buffer(x), dev.buffer(y))
    assert z.shape == (n,) and z.dtype == np.float32
    np.testing.assert_array_equal(z.numpy(), x + y)


def test_elementwise_scalar_and_into_out(dev):
    axpb = cubec.elementwise("float a, float x, float b", "float y", "y = a * x + b")
    x = np.linspace(-1, 1, 300, dtype=np.float32).reshape(3, 100)
    xb = dev.buffer(x)
    out = dev.empty((3, 100), np.float32)
    assert axpb(2.0, xb, 0.5, out=out) is out
    np.testing.assert_allclose(out.numpy(), np.float32(2.0) * x + np.float32(0.5), rtol=1e-6)
    # Another value of a scalar reuses the kernel (the scalars travel as metadata).
    k = axpb.kernel(dev, ("a", "b"))
    axpb(-3.0, xb, 1.0, out=out)
    assert axpb.kernel(dev, ("a", "b")) is k
    np.testing.assert_allclose(out.numpy(), np.float32(-3.0) * x + np.float32(1.0), rtol=1e-6)


def test_elementwise_several_outputs_ints_and_the_index(dev):
    split = cubec.elementwise("int x", "int q, uint r, int idx",
                              "q = x / 7; r = uint(x % 7 + 7) % 7u; idx = int(i)")
    x = np.arange(-500, 500, dtype=np.int32)
    q, r, idx = split(dev.buffer(x))
    np.testing.assert_array_equal(q.numpy(), np.trunc(x / 7).astype(np.int32))
    np.testing.assert_array_equal(r.numpy(), (x % 7).astype(np.uint32))
    np.testing.assert_array_equal(idx.numpy(), np.arange(1000, dtype=np.int32))


def test_the_same_template_source_is_one_kernel(dev):
    a = cubec.elementwise("float x", "float y", "y = x * x", name="square")
    b = cubec.elementwise("float x", "float y", "y = x * x", name="square")
    assert a.source() == b.source()
    ka, kb = a.kernel(dev), b.kernel(dev)
    assert a.kernel(dev) is ka  # compiled once per device by the template
    assert ka.bindings == kb.bindings == 2 and ka.info_size == 4


def test_elementwise_refuses_bad_input_by_name(dev):
    with pytest.raises(ValueError, match="unknown type 'flaot'"):
        cubec.elementwise("flaot x", "float y", "y = x")
    with pytest.raises(ValueError, match="not 'TYPE NAME'"):
        cubec.elementwise("float", "float y", "y = 1")
    with pytest.raises(ValueError, match="both an input and an output"):
        cubec.elementwise("float x", "float x", "x = x")
    add = cubec.elementwise("float x, float y", "float z", "z = x + y")
    with pytest.raises(TypeError, match="takes 2 inputs"):
        add(dev.zeros(4, np.float32))
    with pytest.raises(TypeError, match="'y': a buffer of int32, the template says float32"):
        add(dev.zeros(4, np.float32), dev.zeros(4, np.int32))
    with pytest.raises(ValueError, match="'y': 2 elements, fewer than the 4 launched"):
        add(dev.zeros(4, np.float32), dev.zeros(2, np.float32))
    broken = cubec.elementwise("float x", "float y", "y = x +* 2")
    with pytest.raises(cubec.CompileFailed):
        broken(dev.zeros(4, np.float32))


@pytest.mark.parametrize("n", [1, 129, 4096, 300_001])
def test_reduction_sum_of_squares(dev, n):
    sumsq = cubec.reduction("float x", "float y", "x * x", "a + b", "0", name="sumsq")
    x = np.random.default_rng(n).standard_normal(n).astype(np.float32)
    out = sumsq(dev.buffer(x)).numpy()
    assert out.shape == (1,)
    np.testing.assert_allclose(out[0], np.sum(x.astype(np.float64) ** 2), rtol=1e-5)


def test_reduction_max_norm_and_int_sum(dev):
    x = np.random.default_rng(5).standard_normal(50_000).astype(np.float32)
    xb = dev.buffer(x)
    vmax = cubec.reduction("float x", "float m", "x", "max(a, b)", "-3.402823466e38")
    assert vmax(xb).numpy()[0] == x.max()
    norm = cubec.reduction("float x", "float r", "x * x", "a + b", "0", post_map_expr="r = sqrt(a)")
    np.testing.assert_allclose(norm(xb).numpy()[0], np.linalg.norm(x.astype(np.float64)),
                               rtol=1e-5)
    ints = np.arange(-1000, 50_000, dtype=np.int32)  # the sum fits int32
    isum = cubec.reduction("int x", "int s", "x", "a + b", "0")
    assert isum(dev.buffer(ints)).numpy()[0] == ints.sum()
    # Two inputs and a scalar: a weighted dot product.
    w = np.random.default_rng(6).standard_normal(50_000).astype(np.float32)
    dot = cubec.reduction("float x, float w, float s", "float d", "x * w * s", "a + b", "0")
    np.testing.assert_allclose(dot(xb, dev.buffer(w), 0.5).numpy()[0],
                               0.5 * np.dot(x.astype(np.float64), w), rtol=1e-4, atol=1e-4)


def test_reduction_refuses_bad_input(dev):
    with pytest.raises(ValueError, match="a reduction has one output"):
        cubec.reduction("float x", "float a, float b", "x", "a + b", "0")
    r = cubec.reduction("float x, float y", "float s", "x + y", "a + b", "0")
    with pytest.raises(ValueError, match="inputs of 4 and 5 elements"):
        r(dev.zeros(4, np.float32), dev.zeros(5, np.float32))
    # The inputs are checked as the element-wise template checks them.
    with pytest.raises(TypeError, match=r"takes 2 inputs \(x, y\), got 1"):
        r(dev.zeros(4, np.float32))
    with pytest.raises(TypeError, match="'y': a buffer of int32, the template says float32"):
        r(dev.zeros(4, np.float32), dev.zeros(4, np.int32))
    with pytest.raises(TypeError, match="input 'x': a cubec buffer or a number, not str"):
        r("x", dev.zeros(4, np.float32))


def test_the_same_template_twice_hits_cubecs_kernel_cache(scratch, monkeypatch):
    # The second compilation with shaderc fails (fault injection): a template whose source
    # cubec has seen must not reach it, a new source must.
    monkeypatch.setenv("CUBEC_CACHE_DIR", str(scratch))
    monkeypatch.setenv("CUBEC_FAULT", "compile:2")
    body = "y = x * 3.0"
    with cubec.Device() as d:
        first = cubec.elementwise("float x", "float y", body, name="triple")
        second = cubec.elementwise("float x", "float y", body, name="triple")
        x = d.buffer(np.arange(10, dtype=np.float32))
        np.testing.assert_array_equal(first(x).numpy(), 3 * np.arange(10, dtype=np.float32))
        np.testing.assert_array_equal(second(x).numpy(), 3 * np.arange(10, dtype=np.float32))
        other = cubec.elementwise("float x", "float y", "y = x * 4.0", name="quadruple")
        with pytest.raises(cubec.Error, match="compile"):
            other(x)
    # A new process (here: a new device) finds the kernel on disk: shaderc's first compilation
    # is made to fail, and the template still builds.
    monkeypatch.setenv("CUBEC_FAULT", "compile:1")
    with cubec.Device() as d:
        third = cubec.elementwise("float x", "float y", body, name="triple")
        x = d.buffer(np.arange(10, dtype=np.float32))
        np.testing.assert_array_equal(third(x).numpy(), 3 * np.arange(10, dtype=np.float32))


def test_elementwise_past_65535_workgroups_uses_a_second_grid_dimension(dev):
    # 128 elements per workgroup: this count needs 65537 workgroups, more than Vulkan
    # guarantees in x, so the grid is 65535 x 2 and the last elements sit in row 1.
    n = 65537 * 128 - 3
    inc = cubec.elementwise("uint x", "uint y", "y = x + 1u")
    x = np.arange(n, dtype=np.uint32)
    y = inc(dev.buffer(x)).numpy()
    assert y[-1] == n and y[65535 * 128] == 65535 * 128 + 1
    np.testing.assert_array_equal(y, x + 1)
