"""Lifetime: objects released on collection, devices closed before their objects, and the
interpreter's exit with objects still alive, in each order; nothing may crash."""

import gc
import os
import time
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import cubec
from conftest import SAXPY, saxpy_info


def test_calls_on_a_closed_device_are_refused():
    d = cubec.Device()
    b = d.buffer(np.ones(4, np.float32))
    k = d.kernel(glsl=SAXPY)
    launch = k.bind(b, b, b, groups=1, info=saxpy_info(4, 1.0))
    d.close()
    assert d.closed
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        b.numpy()
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        d.empty(4)
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        k(b, b, b, groups=1, info=saxpy_info(4, 1.0))
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        launch()
    # Collected after the close: their releases are skipped.
    del b, k, launch
    gc.collect()


def test_objects_collected_before_the_device():
    with cubec.Device() as d:
        k = d.kernel(glsl=SAXPY)
        bufs = [d.buffer(np.full(64, i, np.float32)) for i in range(3)]
        k(*bufs, groups=1, info=saxpy_info(64, 2.0))
        expect = 2.0 * bufs[0].numpy() + bufs[1].numpy()
        np.testing.assert_array_equal(bufs[2].numpy(), expect)
        del k, bufs
        gc.collect()


def test_a_released_buffer_is_refused():
    with cubec.Device() as d:
        b = d.empty(4)
        b.release()
        with pytest.raises(cubec.InvalidArgument, match="released"):
            b.numpy()


def test_host_memory_outlives_close_until_its_array_goes():
    d = cubec.Device()
    h = cubec.host_empty(1024, "float32", device=d)
    h[:] = 3.0
    k = d.kernel(glsl=SAXPY)
    b = d.buffer(h)
    launch = k.bind(b, b, b, groups=1, info=saxpy_info(4, 1.0))
    d.close()  # deferred: numpy still points at the memory
    assert d.closed
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        d.empty(4)
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        k(b, b, b, groups=1, info=saxpy_info(4, 1.0))
    with pytest.raises(cubec.InvalidArgument, match="closed"):
        launch()
    np.testing.assert_array_equal(h, np.full(1024, 3.0, np.float32))
    del h  # the last hold: the device closes now
    gc.collect()


def test_a_pending_read_outlives_close():
    d = cubec.Device()
    a = np.arange(1 << 16, dtype=np.float32)
    f = d.buffer(a).read_async()
    d.close()
    np.testing.assert_array_equal(f.result(), a)


EXIT_ORDERS = {
    "objects alive at exit": """
        d = cubec.Device()
        b = d.buffer(np.ones(8, np.float32))
        k = d.kernel(glsl=SAXPY)
        l = k.bind(b, b, b, groups=1, info=saxpy_info(8, 1.0))
        l()
    """,
    "device closed, objects alive": """
        d = cubec.Device()
        b = d.buffer(np.ones(8, np.float32))
        k = d.kernel(glsl=SAXPY)
        d.close()
    """,
    "host array alive at exit": """
        d = cubec.Device()
        h = cubec.host_empty(4096, "float32")
        h[:] = 1
        b = d.buffer(h)
    """,
    "read in flight at exit": """
        d = cubec.Device()
        f = d.buffer(np.ones(1 << 18, np.float32)).read_async()
    """,
    "mapped views alive at exit": """
        d = cubec.Device()
        v = d.buffer(np.ones(64, np.float32)).numpy()
        t = np.from_dlpack(d.zeros(8, "int32"))
        c = d.zeros(4).__dlpack__()
        assert v.sum() == 64 and t.sum() == 0
    """,
    "device closed, mapped view alive at exit": """
        d = cubec.Device()
        v = d.buffer(np.ones(64, np.float32)).numpy()
        d.close()
        v[:] = 2
    """,
    "only the objects referenced, no device name": """
        b = cubec.Device().empty(16)
        s = b.device.stream()
    """,
}


@pytest.mark.parametrize("order", sorted(EXIT_ORDERS))
def test_interpreter_exit(order):
    prologue = "import numpy as np\nimport cubec\nfrom conftest import SAXPY, saxpy_info\n"
    code = prologue + textwrap.dedent(EXIT_ORDERS[order]) + "print('done')\n"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (os.path.dirname(__file__),
                                                    env.get("PYTHONPATH")) if p)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "done"


# A kernel that keeps lavapipe busy for a good fraction of a second (contended atomics: a plain
# loop is folded by LLVM, and llvmpipe stops loops at 65535 iterations), with a checkable count.
LONG_KERNEL = """#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer O { uint o[]; };
void main() {
    for (uint i = 0u; i < 60000u; i++) atomicAdd(o[0], 1u);
}
"""
LONG_GROUPS = 16
LONG_COUNT = 60000 * 64 * LONG_GROUPS


def test_close_from_another_thread_waits_for_a_blocked_call():
    import threading

    d = cubec.Device()
    k = d.kernel(glsl=LONG_KERNEL)
    s = d.stream()  # each thread has a stream of its own: the waiting one names this one
    b = d.zeros(1, "uint32", stream=s)
    k(b, groups=LONG_GROUPS, stream=s)
    errors, synced = [], []

    def wait():
        try:
            d.sync(stream=s)
            synced.append(time.perf_counter())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    t = threading.Thread(target=wait)
    t.start()
    time.sleep(0.05)  # the thread is inside cubec_sync: the kernel runs for about 0.3 s
    d.close()  # the sync holds the device: the close is deferred to its end, not done under it
    closed = time.perf_counter()
    t.join()
    assert errors == [] and d.closed
    assert closed < synced[0], "close() waited for the work instead of deferring to the sync"


def test_threads_sharing_a_future():
    import threading

    with cubec.Device() as d:
        k = d.kernel(glsl=LONG_KERNEL)
        b = d.zeros(1, "uint32")
        k(b, groups=LONG_GROUPS)
        f = b.read_async()
        results = []

        def wait(timeout):
            results.append(f.result(timeout=timeout))

        threads = [threading.Thread(target=wait, args=(t,)) for t in (None, None, 60.0, 60.0)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        expect = f.result()
        assert len(results) == 4 and all(r is expect for r in results)
        assert expect[0] == LONG_COUNT
