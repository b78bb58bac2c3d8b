"""info= as a dict: the kernel's reflected metadata members filled by name (scalars, vectors,
arrays, matrices), checked against numpy; and the refusals that keep a dict from launching with
a member left at zero."""

import numpy as np
import pytest

import cubec
from conftest import saxpy_info

MIXED = """#version 450
layout(local_size_x = 1) in;
layout(set = 0, binding = 0) writeonly buffer O { float o[]; };
CUBEC_INFO(uint n; vec3 dir; float scale; int delta[3]; mat2 m; double d; bool flag;)
void main() {
    o[0] = float(info.n);
    o[1] = info.dir.x; o[2] = info.dir.y; o[3] = info.dir.z;
    o[4] = info.scale;
    o[5] = float(info.delta[0]); o[6] = float(info.delta[1]); o[7] = float(info.delta[2]);
    o[8] = info.m[0][0]; o[9] = info.m[0][1]; o[10] = info.m[1][0]; o[11] = info.m[1][1];
    o[12] = float(info.d);
    o[13] = info.flag ? 1.0 : 0.0;
}
"""


def test_saxpy_by_name_matches_the_record(dev, saxpy):
    n = 500
    x = np.random.default_rng(3).random(n, dtype=np.float32)
    y = np.random.default_rng(4).random(n, dtype=np.float32)
    bx, by, bz = dev.buffer(x), dev.buffer(y), dev.empty(n)
    saxpy(bx, by, bz, groups=8, info={"n": n, "alpha": -1.5})
    np.testing.assert_allclose(bz.numpy(), -1.5 * x + y, rtol=1e-6)
    assert [f["name"] for f in saxpy.info_fields] == ["n", "alpha"]
    assert [(f["offset"], f["type"]) for f in saxpy.info_fields] == [(0, "uint32"), (4, "float32")]
    bound = saxpy.bind(bx, by, bz, groups=8, info={"n": n, "alpha": 2.0})
    bound()
    np.testing.assert_allclose(bz.numpy(), 2.0 * x + y, rtol=1e-6)
    bound(info={"alpha": 3.0, "n": np.uint32(n)})
    np.testing.assert_allclose(bz.numpy(), 3.0 * x + y, rtol=1e-6)


def test_vectors_arrays_matrices_and_bools(dev):
    if "float64" not in dev.info["features"]:
        pytest.skip("the device has no float64")
    k = dev.kernel(glsl=MIXED)
    out = dev.zeros(14, "float32")
    k(out, groups=1, info={"n": 7, "dir": (0.5, 1.5, -2.0), "scale": 4.0, "delta": [-1, 0, 9],
                           "m": [[1.0, 2.0], [3.0, 4.0]], "d": 0.25, "flag": True})
    expect = np.array([7, 0.5, 1.5, -2.0, 4.0, -1, 0, 9, 1, 2, 3, 4, 0.25, 1], np.float32)
    np.testing.assert_array_equal(out.numpy(), expect)


def test_dict_refusals_name_the_member(dev, saxpy):
    b = dev.empty(4)
    with pytest.raises(cubec.InvalidArgument, match=r"lacks member 'alpha'"):
        saxpy(b, b, b, groups=1, info={"n": 4})
    with pytest.raises(cubec.InvalidArgument, match=r"no member 'beta' \(it has: n, alpha\)"):
        saxpy(b, b, b, groups=1, info={"n": 4, "alpha": 1.0, "beta": 2})
    with pytest.raises(cubec.InvalidArgument, match=r"'n' \(uint32\) cannot hold -1"):
        saxpy(b, b, b, groups=1, info={"n": -1, "alpha": 1.0})
    with pytest.raises(TypeError, match="'alpha' is a float32, not 'x'"):
        saxpy(b, b, b, groups=1, info={"n": 4, "alpha": "x"})
    plain = dev.kernel(glsl="#version 450\nlayout(local_size_x = 1) in;\n"
                            "layout(set = 0, binding = 0) buffer O { uint o[]; };\n"
                            "void main() { o[0] = 1u; }")
    with pytest.raises(cubec.InvalidArgument, match="lists no members"):
        plain(dev.empty(1, "uint32"), groups=1, info={"n": 1})
    # the kernel still launches after the refusals
    x = np.ones(4, np.float32)
    bx = dev.buffer(x)
    saxpy(bx, bx, b, groups=1, info=saxpy_info(4, 1.0))
    np.testing.assert_array_equal(b.numpy(), 2 * x)


def test_vector_of_the_wrong_length(dev):
    k = dev.kernel(glsl=MIXED.replace(" double d;", "").replace("float(info.d)", "0.0"))
    out = dev.zeros(14, "float32")
    with pytest.raises(cubec.InvalidArgument, match="'dir' holds 3 float32 values, got 2"):
        k(out, groups=1, info={"n": 1, "dir": (1, 2), "scale": 1, "delta": [0, 0, 0],
                               "m": np.eye(2), "flag": False})
