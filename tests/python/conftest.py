"""Fixtures of the Python tests: a device with the Khronos validation layer on (any message
fails the test, as in the C tests) and the shared kernel (defined in saxpy_kernel.py). Run by
ctest (test_python) with the build tree's package on PYTHONPATH."""

import pytest

import cubec
# The tests import these from here.
from saxpy_kernel import SAXPY, SAXPY_INFO, saxpy_info  # noqa: F401


@pytest.fixture
def dev():
    d = cubec.Device(validation=True)
    yield d
    messages = d.validation_messages
    d.close()
    assert messages == 0, "the validation layer reported %d message(s)" % messages


@pytest.fixture
def saxpy(dev):
    return dev.kernel(glsl=SAXPY, name="saxpy")


@pytest.fixture
def scratch():
    """A temporary directory removed after the test (pytest's tmp_path keeps the last runs in
    TMPDIR, which ctest's test_tmp_empty refuses)."""
    import pathlib
    import tempfile

    with tempfile.TemporaryDirectory(prefix="cubec-pytest-") as d:
        yield pathlib.Path(d)
