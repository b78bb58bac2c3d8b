"""Autotuning with Python candidates and traces from Python, checked against what the
candidates did and what the trace file holds."""

import os

import numpy as np
import pytest

import cubec

ADD1 = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Y { uint y[]; };
CUBEC_INFO(uint n;)
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < info.n) y[i] = y[i] + 1u;
}
"""

N = 1 << 16


@pytest.fixture
def add1(dev):
    return dev.kernel(glsl=ADD1, name="add1")


def test_the_cheaper_candidate_wins_and_outcomes_are_reported(dev, add1):
    y = dev.zeros(N, np.uint32)
    info = np.array([N], np.uint32).tobytes()
    calls = {"once": 0, "thirty_times": 0}

    def once():
        calls["once"] += 1
        add1(y, groups=(N // 64, 1, 1), info=info)

    def thirty_times():
        calls["thirty_times"] += 1
        for _ in range(30):
            add1(y, groups=(N // 64, 1, 1), info=info)

    with cubec.Tuner(dev, "test_python_tuner", warmup=1, samples=3, memory_only=True) as t:
        best = t.choose("n=65536", {"thirty_times": thirty_times, "once": once})
        assert best.name == "once" and best.index == 1 and best.candidate is once
        assert best.source == "measured" and best.median_ns > 0
        # Each candidate ran warmup + samples times, and every run reached the GPU.
        assert calls == {"once": 4, "thirty_times": 4}
        assert y.numpy()[0] == 4 + 4 * 30
        outcomes = t.outcomes()
        assert list(outcomes) == ["thirty_times", "once"]
        assert outcomes["once"]["state"] == "timed" and outcomes["once"]["samples"] == 3
        assert outcomes["thirty_times"]["median_ns"] > outcomes["once"]["median_ns"]
        # The choice is remembered: nothing runs the second time.
        again = t.choose("n=65536", {"thirty_times": thirty_times, "once": once})
        assert again.name == "once" and again.source == "memory"
        assert calls == {"once": 4, "thirty_times": 4}


def test_a_raising_candidate_is_rejected_with_its_exception(dev, add1):
    y = dev.zeros(N, np.uint32)
    info = np.array([N], np.uint32).tobytes()

    def good():
        add1(y, groups=(N // 64, 1, 1), info=info)

    def bad():
        raise ValueError("no such tile")

    with cubec.Tuner(dev, "test_python_tuner_reject", samples=2, memory_only=True) as t:
        best = t.choose("k", [bad, good])
        assert best.name == "good"
        o = t.outcomes()["bad"]
        assert o["state"] == "rejected" and o["code"] == "CUBEC_INVALID_ARGUMENT"
        assert "candidate 'bad' raised ValueError: no such tile" in o["reason"]
        # Every candidate rejected (two: a single one is chosen unmeasured): choose raises the
        # rejections' code, with the first candidate's exception as the cause.
        with pytest.raises(cubec.InvalidArgument, match="every candidate was rejected.*no such tile") as e:
            t.choose("k2", [bad, ("bad2", bad)])
        assert isinstance(e.value.__cause__, ValueError)


def test_candidates_get_the_stream_given_to_choose(dev, add1):
    s = dev.stream()
    y = dev.zeros(N, np.uint32, stream=s)
    info = np.array([N], np.uint32).tobytes()
    seen = []

    def run(stream):
        seen.append(stream)
        add1(y, groups=(N // 64, 1, 1), info=info, stream=stream)

    with cubec.Tuner(dev, "test_python_tuner_stream", warmup=1, samples=1,
                     memory_only=True) as t:
        t.choose("s", {"a": run, "b": run}, stream=s)
    assert seen and all(x is s for x in seen)
    assert y.numpy(stream=s)[0] == len(seen)


def test_bad_candidates_are_refused(dev):
    with cubec.Tuner(dev, "test_python_tuner_bad", memory_only=True) as t:
        with pytest.raises(TypeError, match="candidate 0 is neither"):
            t.choose("k", [42])
        with pytest.raises(ValueError, match="appears twice"):
            t.choose("k", [("a", print), ("a", print)])
        with pytest.raises(ValueError, match="1 to 256"):
            t.choose("k", [])
    with pytest.raises(cubec.Error, match="closed"):
        t.choose("k", [print])


def test_tracing_records_the_launches(scratch, add1):
    path = scratch / "trace.json"
    before = os.environ.get("CUBEC_TRACE")
    with cubec.tracing(path):
        with cubec.Device() as d:
            k = d.kernel(glsl=ADD1, name="traced_add1")
            y = d.zeros(N, np.uint32)
            k(y, groups=(N // 64, 1, 1), info=np.array([N], np.uint32).tobytes())
            np.testing.assert_array_equal(y.numpy(), np.ones(N, np.uint32))
            del k, y
    assert os.environ.get("CUBEC_TRACE") == before
    events = cubec.load_trace(path)
    assert any("traced_add1" in str(e.get("name", "")) for e in events)


def test_choose_from_another_python_thread(dev, add1):
    # The candidates run on the thread that called choose (here not the main thread), which
    # takes the GIL back for them while cubec measures with it released.
    import threading

    y = dev.zeros(N, np.uint32)
    info = np.array([N], np.uint32).tobytes()
    ran_on, result = set(), {}

    def run():
        ran_on.add(threading.get_ident())
        add1(y, groups=(N // 64, 1, 1), info=info)

    def worker():
        with cubec.Tuner(dev, "test_python_tuner_thread", warmup=1, samples=2,
                         memory_only=True) as t:
            result["best"] = t.choose("t", {"a": run, "b": run})

    th = threading.Thread(target=worker)
    th.start()
    th.join(timeout=120)
    assert not th.is_alive() and result["best"].name in ("a", "b")
    assert ran_on == {th.ident}
    assert y.numpy()[0] == 2 * (1 + 2)


def test_pre_bound_launches_as_candidates(dev, add1):
    y = dev.zeros(N, np.uint32)
    info = np.array([N], np.uint32).tobytes()
    whole = add1.bind(y, groups=(N // 64, 1, 1), info=info)
    half = add1.bind(y, groups=(N // 128, 1, 1), info=info)  # the first half of y only
    with cubec.Tuner(dev, "test_python_tuner_launches", warmup=1, samples=2,
                     memory_only=True) as t:
        best = t.choose("launches", [("whole", whole), ("half", half)])
        assert best.candidate is (whole if best.name == "whole" else half)
        assert {o["state"] for o in t.outcomes().values()} == {"timed"}
    got = y.numpy()
    np.testing.assert_array_equal(got[: N // 2], np.full(N // 2, 6, np.uint32))
    np.testing.assert_array_equal(got[N // 2:], np.full(N // 2, 3, np.uint32))


def test_a_candidate_closing_the_device_waits_for_the_tuner(add1):
    # choose() holds the device open while cubec measures without the GIL: a close() from a
    # candidate (or another thread) takes effect when choose() returns, not under it. The
    # device counts as closed at once, so the later runs are refused and every candidate is
    # rejected; nothing is freed under cubec_tune_choose.
    d = cubec.Device()
    k = d.kernel(glsl=ADD1)
    y = d.zeros(N, np.uint32)
    info = np.array([N], np.uint32).tobytes()

    def closer():
        k(y, groups=(N // 64, 1, 1), info=info)
        d.close()

    def plain():
        k(y, groups=(N // 64, 1, 1), info=info)

    t = cubec.Tuner(d, "test_python_tuner_close", warmup=1, samples=2, memory_only=True)
    with pytest.raises(cubec.Error, match="every candidate was rejected.*device is closed"):
        t.choose("c", {"closer": closer, "plain": plain})
    assert d.closed
    with pytest.raises(cubec.Error, match="closed"):
        y.numpy()
    t.close()
