"""Memory windows, run windows, the process-wide dry run and the memory report from Python.
Each window's effect is checked on the data (a dry launch leaves its output as it was) or on the
report (the window's mode and depth)."""

import json

import numpy as np
import pytest

import cubec

FILL = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) writeonly buffer Y { uint y[]; };
CUBEC_INFO(uint n; uint value;)
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) y[i] = info.value;
}
"""

N = 256


@pytest.fixture
def fill(dev):
    return dev.kernel(glsl=FILL, name="fill")


def launch(k, y, value, stream=None):
    k(y, groups=(N // 64, 1, 1), info=np.array([N, value], np.uint32).tobytes(), stream=stream)


def test_a_dry_run_window_drops_launches(dev, fill):
    s = dev.stream()
    y = dev.zeros(N, np.uint32, stream=s)
    with dev.run_window("dry", s) as w:
        assert w.depth == 1
        launch(fill, y, 5, s)
        with dev.run_window("real", s):  # opts the stream back in
            launch(fill, y, 7, s)
        launch(fill, y, 9, s)
    assert w.depth == 0
    np.testing.assert_array_equal(y.numpy(stream=s), np.full(N, 7, np.uint32))
    launch(fill, y, 11, s)
    np.testing.assert_array_equal(y.numpy(stream=s), np.full(N, 11, np.uint32))


def test_the_process_wide_dry_run(dev, fill):
    y = dev.zeros(N, np.uint32)
    with cubec.dry_run():
        launch(fill, y, 3)
    np.testing.assert_array_equal(y.numpy(), np.zeros(N, np.uint32))
    launch(fill, y, 4)
    np.testing.assert_array_equal(y.numpy(), np.full(N, 4, np.uint32))


def test_windows_close_when_the_body_raises(dev, fill):
    y = dev.zeros(N, np.uint32)
    with pytest.raises(RuntimeError):
        with dev.run_window("dry"):
            raise RuntimeError("boom")
    launch(fill, y, 2)  # runs: the window closed
    np.testing.assert_array_equal(y.numpy(), np.full(N, 2, np.uint32))
    with pytest.raises(RuntimeError):
        with cubec.dry_run():
            raise RuntimeError("boom")
    launch(fill, y, 6)
    np.testing.assert_array_equal(y.numpy(), np.full(N, 6, np.uint32))


def test_bad_modes_are_refused_by_name(dev):
    with pytest.raises(ValueError, match="mode 'wet' is not one of 'dry', 'real'"):
        dev.run_window("wet")
    with pytest.raises(ValueError, match="mode 'forever' is not one of 'auto', 'persistent'"):
        dev.memory_window("forever")


def test_memory_window_sets_the_allocation_mode(dev):
    s = dev.stream()
    assert dev.memory_report(s)["window_mode"] == "auto"
    with dev.memory_window("persistent", s):
        r = dev.memory_report(s)
        assert r["window_mode"] == "persistent" and r["window_depth"] == 1
        with dev.memory_window("dedicated", s):
            assert dev.memory_report(s)["window_depth"] == 2
        weights = dev.buffer(np.arange(4096, dtype=np.float32), stream=s)
    r = dev.memory_report(s)
    assert r["window_mode"] == "auto" and r["window_depth"] == 0
    # The buffer made in the window lives in the persistent pool, and keeps its bytes.
    assert r["persistent"]["allocations"] >= 1
    assert r["persistent"]["bytes_in_use"] >= 4096 * 4
    np.testing.assert_array_equal(weights.numpy(stream=s), np.arange(4096, dtype=np.float32))


def test_memory_report_dict_json_and_table(dev):
    b = dev.zeros(1 << 20, np.uint8)
    r = dev.memory_report()
    assert r["bytes_in_use"] >= 1 << 20 and r["allocations"] >= 1
    assert r["bytes_reserved"] >= r["bytes_in_use"]
    assert sum(p["bytes_in_use"] for p in r["pools"]) == r["bytes_in_use"]
    assert r["preset"] and r["budget_source"]
    doc = json.loads(dev.memory_report(format="json"))
    assert isinstance(doc, dict) and doc
    table = dev.memory_report(format="table")
    assert isinstance(table, str) and "memory" in table
    with pytest.raises(ValueError, match="format 'yaml' is not one of"):
        dev.memory_report(format="yaml")
    with pytest.raises(ValueError, match="stream= is for format 'dict' only"):
        dev.memory_report(dev.stream(), format="json")
    del b
    dev.memory_cleanup()


def test_windows_of_a_closed_device_are_refused():
    d = cubec.Device()
    w = d.memory_window("persistent")
    d.close()
    with pytest.raises(cubec.Error, match="closed"):
        with w:
            pass
    with pytest.raises(cubec.Error, match="closed"):
        d.memory_report()
