"""The Python examples (examples/python/), each run on the test's device and its result checked
against numpy here, independently of the example's own check; then each example's main() as a
user runs it (exit status 0)."""

import importlib.util
import os

import numpy as np
import pytest

import cubec

EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples",
                        "python")


def load(name):
    spec = importlib.util.spec_from_file_location(f"example_{name}",
                                                  os.path.join(EXAMPLES, name + ".py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_saxpy(dev):
    r = load("saxpy").run(dev, n=100_001, a=-1.5)
    np.testing.assert_allclose(r["z"], np.float32(-1.5) * r["x"] + r["y"], rtol=1e-6, atol=1e-6)


def test_softmax(dev):
    r = load("softmax").run(dev, rows=37, cols=1000)
    x = r["x"].astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(r["y"], e / e.sum(axis=1, keepdims=True), atol=5e-6)


def test_mlp_graph(dev):
    r = load("mlp_graph").run(dev, batches=4)
    p = r["params"]
    for x, logits in zip(r["inputs"], r["logits"]):
        hidden = np.maximum(x.astype(np.float64) @ p["w1"] + p["b1"], 0)
        np.testing.assert_allclose(logits, hidden @ p["w2"] + p["b2"], atol=1e-4, rtol=1e-4)
    # Different inputs gave different logits: the replays read the fresh inputs.
    assert not np.array_equal(r["logits"][0], r["logits"][1])
    assert r["profile"]["duration_ns"] > 0


def test_autotune(dev):
    r = load("autotune").run(dev, size=64, memory_only=True)
    np.testing.assert_allclose(r["c"], r["a"].astype(np.float64) @ r["b"], atol=1e-4, rtol=1e-4)
    assert r["best"].name in load("autotune").SHAPES
    assert r["outcomes"]["broken"]["state"] == "rejected"
    assert "broken on purpose" in r["outcomes"]["broken"]["reason"]


@pytest.mark.parametrize("name", ["saxpy", "softmax", "mlp_graph", "autotune"])
def test_main_exits_zero(name, scratch, monkeypatch, capsys):
    # The autotune example stores its choice in the cache directory: a temporary one here.
    monkeypatch.setenv("CUBEC_CACHE_DIR", str(scratch))
    monkeypatch.setattr("sys.argv", [name])
    assert load(name).main() == 0
    out = capsys.readouterr().out
    assert "device:" in out and "MISMATCH" not in out
