#!/bin/sh
# `pip install .` into a fresh virtual environment (with the system's numpy), then a kernel run
# from outside the source tree through the installed package, checked against numpy. The wheel's
# CMake build lives in BUILD_DIR (the ctest build tree's pip-build/), so a rerun rebuilds only what
# changed; pip fetches scikit-build-core from PyPI. Usage: pip_install_test.sh PYTHON SOURCE_DIR
# BUILD_DIR
set -eu
python=$1
source_dir=$2
build_dir=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$python" -m venv --system-site-packages "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check \
  --config-settings=build-dir="$build_dir" "$source_dir"
cd "$work"
"$work/venv/bin/python" - <<'PY'
import os, subprocess, sys
import numpy as np
import cubec

here = os.path.dirname(cubec.__file__)
assert here.startswith(sys.prefix), "cubec imported from %s, not the venv" % here
ext = [f for f in os.listdir(here) if f.startswith("_cubec")]
assert ext == ["_cubec.abi3.so"], ext
libs = subprocess.run(["ldd", os.path.join(here, ext[0])], capture_output=True, text=True).stdout
assert "libstdc++" not in libs and "libcubec" not in libs, libs
with cubec.Device() as dev:
    k = dev.kernel(glsl="""#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
CUBEC_INFO(uint n;)
void main() { uint i = gl_GlobalInvocationID.x; if (i < info.n) y[i] = x[i] * x[i]; }
""")
    x = np.linspace(-2, 2, 300, dtype=np.float32)
    bx, by = dev.buffer(x), dev.empty(300)
    k(bx, by, groups=5, info=np.uint32(300))
    np.testing.assert_allclose(by.numpy(), x * x, rtol=1e-6)
print("installed cubec", cubec.__version__, "ran a kernel from", os.getcwd())
PY
