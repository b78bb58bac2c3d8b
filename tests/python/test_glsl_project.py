"""GLSL as projects keep it, from Python: dev.kernel(path=, include_dirs=, preamble=, defines=)
with #include next to the file and through a directory, an extension from the preamble, and an
edited include compiled again. Results are checked against numpy."""

import pathlib
import tempfile

import numpy as np
import pytest

import cubec

KERNEL = """#version 450
#include "lib/f.glsl"
#include <consts.glsl>
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer O { float o[]; };
void main() {
    uint i = gl_GlobalInvocationID.x;
    o[i] = f(float(i)) + BIAS;
}
"""


@pytest.fixture
def project():
    # tempfile, not pytest's tmp_path: that one stays behind in $TMPDIR, which ctest checks empty.
    with tempfile.TemporaryDirectory(prefix="cubec_test_glsl_project_") as tmp:
        root = pathlib.Path(tmp)
        (root / "kernels" / "lib").mkdir(parents=True)
        (root / "inc").mkdir()
        (root / "kernels" / "k.comp").write_text(KERNEL)
        (root / "kernels" / "lib" / "f.glsl").write_text("float f(float x) { return x * SCALE; }\n")
        (root / "inc" / "consts.glsl").write_text("#define BIAS 0.25\n")
        yield root


def run(dev, kernel):
    out = dev.empty(64)
    kernel(out, groups=1)
    return out.numpy()


def test_includes_and_defines(dev, project):
    k = dev.kernel(path=project / "kernels" / "k.comp", include_dirs=[project / "inc"],
                   defines={"SCALE": 2.0})
    i = np.arange(64, dtype=np.float32)
    np.testing.assert_array_equal(run(dev, k), i * 2 + 0.25)
    # An edited include is a new kernel, never the one compiled before.
    (project / "kernels" / "lib" / "f.glsl").write_text("float f(float x) { return x * SCALE * 3.0; }\n")
    k2 = dev.kernel(path=str(project / "kernels" / "k.comp"), include_dirs=[str(project / "inc")],
                    defines={"SCALE": 2.0})
    np.testing.assert_array_equal(run(dev, k2), i * 6 + 0.25)


def test_missing_include(dev, project):
    with pytest.raises(cubec.Error) as e:
        dev.kernel(path=project / "kernels" / "k.comp", defines={"SCALE": 1})
    message = str(e.value)
    assert "k.comp:3: error: '#include'" in message, message
    assert "consts.glsl" in message and "no include directory to search" in message, message


def test_preamble(dev):
    source = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer O { uint o[]; };
void main() {
    int8_t v = int8_t(gl_GlobalInvocationID.x);
    o[gl_GlobalInvocationID.x] = uint(v * int8_t(2));
}
"""
    with pytest.raises(cubec.Error) as e:
        dev.kernel(glsl=source, name="int8")
    assert "int8:5: error" in str(e.value), str(e.value)
    k = dev.kernel(glsl=source, name="int8",
                   preamble="#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require")
    out = dev.empty(64, dtype=np.uint32)
    k(out, groups=1)
    np.testing.assert_array_equal(out.numpy(), np.arange(64, dtype=np.uint32) * 2)


def test_bad_arguments(dev, project):
    with pytest.raises(TypeError, match="include_dirs must be a list of directories"):
        dev.kernel(glsl=KERNEL, include_dirs=str(project))
    with pytest.raises(TypeError, match=r"include_dirs\[1\] must be a str"):
        dev.kernel(glsl=KERNEL, include_dirs=[str(project), 3])
    with pytest.raises(TypeError, match="preamble must be a str"):
        dev.kernel(glsl=KERNEL, preamble=b"#define X 1")
