"""Graphs (dev.capture / g.replay) and profiles (dev.profile) from Python, each result checked
against numpy."""

import gc

import numpy as np
import pytest

import cubec

SCALE_ADD = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) buffer Y { float y[]; };
CUBEC_INFO(uint n;)
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) y[i] = 2.0 * x[i] + y[i];
}
"""

N = 1000


def info(n):
    return np.array([n], dtype=np.uint32).tobytes()


@pytest.fixture
def scale_add(dev):
    return dev.kernel(glsl=SCALE_ADD, name="scale_add")


def groups(n):
    return ((n + 63) // 64, 1, 1)


def test_replays_run_the_captured_launches_on_fresh_inputs(dev, scale_add):
    s = dev.stream()
    x = dev.zeros(N, np.float32, stream=s)
    y = dev.zeros(N, np.float32, stream=s)
    scale_add(x, y, groups=groups(N), info=info(N), stream=s)  # the warm-up
    with dev.capture(s) as g:
        scale_add(x, y, groups=groups(N), info=info(N), stream=s)
        scale_add(x, y, groups=groups(N), info=info(N), stream=s)
    assert g.handle != 0 and g.stream is s and g.device is dev
    # Recorded, not run: y is still what the warm-up left (zeros).
    np.testing.assert_array_equal(y.numpy(stream=s), np.zeros(N, np.float32))
    rng = np.random.default_rng(0)
    expect = np.zeros(N, np.float32)
    for _ in range(3):
        xs = rng.standard_normal(N).astype(np.float32)
        x.write(xs, stream=s)
        g.replay()
        expect = 2 * xs + (2 * xs + expect)
        np.testing.assert_allclose(y.numpy(stream=s), expect, rtol=1e-6)
    g.close()
    g.close()  # a destroyed graph is accepted
    with pytest.raises(cubec.Error):
        g.replay()


def test_replay_on_another_stream_is_ordered_after_its_writes(dev, scale_add):
    x = dev.buffer(np.ones(N, np.float32))
    y = dev.zeros(N, np.float32)
    with dev.capture() as g:  # the calling thread's stream
        scale_add(x, y, groups=groups(N), info=info(N))
    other = dev.stream()
    g.replay(stream=other)
    other.sync()
    np.testing.assert_array_equal(y.numpy(), np.full(N, 2.0, np.float32))


def test_an_exception_in_the_body_drops_the_capture_and_goes_on(dev, scale_add):
    x = dev.buffer(np.ones(N, np.float32))
    y = dev.zeros(N, np.float32)
    with pytest.raises(ZeroDivisionError):
        with dev.capture() as g:
            scale_add(x, y, groups=groups(N), info=info(N))
            1 / 0
    assert g.handle == 0
    # The stream is usable again and runs launches for real.
    scale_add(x, y, groups=groups(N), info=info(N))
    np.testing.assert_array_equal(y.numpy(), np.full(N, 2.0, np.float32))


def test_a_read_inside_a_capture_is_refused_by_name(dev, scale_add):
    y = dev.zeros(N, np.float32)
    # numpy() maps where the memory is host-visible (cubec_buffer_map), else reads (cubec_read).
    with pytest.raises(cubec.GraphState, match="cubec_(read|buffer_map)"):
        with dev.capture():
            y.numpy()
    y.numpy()  # usable after the block


def test_a_graph_object_is_entered_once(dev, scale_add):
    x = dev.buffer(np.ones(N, np.float32))
    y = dev.zeros(N, np.float32)
    with dev.capture() as g:
        scale_add(x, y, groups=groups(N), info=info(N))
    with pytest.raises(cubec.GraphState, match="already holds a graph"):
        with g:
            pass


def test_graph_collected_after_its_device_closed():
    d = cubec.Device()
    k = d.kernel(glsl=SCALE_ADD)
    x = d.buffer(np.ones(N, np.float32))
    y = d.zeros(N, np.float32)
    with d.capture() as g:
        k(x, y, groups=groups(N), info=info(N))
    d.close()
    with pytest.raises(cubec.Error, match="closed"):
        g.replay()
    del g, k, x, y
    gc.collect()


def test_profile_times_the_block(dev, scale_add):
    n = 1 << 16
    x = dev.buffer(np.ones(n, np.float32))
    y = dev.zeros(n, np.float32)
    with dev.profile() as p:
        for _ in range(4):
            scale_add(x, y, groups=groups(n), info=info(n))
    r = p.result
    assert set(r) == {"duration_ns", "method", "begin_ns", "end_ns"}
    assert r["method"] in ("device", "system")
    assert r["duration_ns"] > 0 and r["duration_ns"] == p.duration_ns
    assert r["begin_ns"] <= r["end_ns"]
    np.testing.assert_array_equal(y.numpy(), np.full(n, 8.0, np.float32))


def test_profile_of_a_raising_block_is_abandoned(dev, scale_add):
    with pytest.raises(KeyError):
        with dev.profile() as p:
            raise KeyError("x")
    with pytest.raises(cubec.Error, match="never ended"):
        p.result
    # The stream profiles again afterwards.
    with dev.profile() as q:
        pass
    assert q.result["duration_ns"] >= 0


def test_profile_of_a_graph_replay(dev, scale_add):
    x = dev.buffer(np.ones(N, np.float32))
    y = dev.zeros(N, np.float32)
    with dev.capture() as g:
        scale_add(x, y, groups=groups(N), info=info(N))
    with dev.profile() as p:
        g.replay()
    assert p.duration_ns > 0
    np.testing.assert_array_equal(y.numpy(), np.full(N, 2.0, np.float32))
