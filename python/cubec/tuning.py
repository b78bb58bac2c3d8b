"""Autotuning with Python candidates: the Pythonic face of cubec's tuner (docs/autotune.md).

    tuner = dev.tuner("matmul")                      # or cubec.Tuner(dev, "matmul")
    best = tuner.choose("1024x1024", {"tile8": run8, "tile16": run16})
    best.candidate()                                 # run the winner
    tuner.outcomes()                                 # what each candidate measured

A candidate is any callable that queues one execution of the work (launches, copies, fills; no
read or sync): a function, a lambda, or a pre-bound launch (``k.bind(...)``). It is called with
no argument, or with ``stream=`` when choose() is given a stream. cubec runs it repeatedly while
measuring (warm-up runs, then profiled samples), on the thread that called choose(); an exception
it raises rejects it, with the exception's type and message as the reason.
"""

from . import _cubec

__all__ = ["Tuner", "TuneResult"]


class TuneResult(tuple):
    """The choice of Tuner.choose(): (index, name, candidate, source, median_ns).

    index: the winner's position among the candidates; name and candidate: its name and callable;
    source: 'measured' (this call), 'memory' (this tuner chose it before), 'disk' (an earlier
    process), 'single' (the only candidate, not run); median_ns: its median GPU time when measured.
    (A tuple class of its own rather than a namedtuple, so that `import cubec` does not import
    collections.)"""

    __slots__ = ()

    def __new__(cls, index, name, candidate, source, median_ns):
        return tuple.__new__(cls, (index, name, candidate, source, median_ns))

    index = property(lambda self: self[0])
    name = property(lambda self: self[1])
    candidate = property(lambda self: self[2])
    source = property(lambda self: self[3])
    median_ns = property(lambda self: self[4])

    def __repr__(self):
        return (f"TuneResult(index={self[0]}, name={self[1]!r}, source={self[3]!r}, "
                f"median_ns={self[4]})")


def _pairs(candidates):
    """(name, callable) pairs from a dict, a sequence of pairs or a sequence of callables."""
    if isinstance(candidates, dict):
        return [(str(k), v) for k, v in candidates.items()]
    pairs = []
    for i, c in enumerate(candidates):
        if isinstance(c, tuple) and len(c) == 2 and isinstance(c[0], str):
            pairs.append(c)
        elif callable(c):
            pairs.append((getattr(c, "__name__", None) or f"candidate{i}", c))
        else:
            raise TypeError(f"candidate {i} is neither a callable nor a (name, callable) pair")
    names = [n for n, _ in pairs]
    for n in names:
        if names.count(n) > 1:
            raise ValueError(f"candidate name {n!r} appears twice; name them with a dict")
    return pairs


class Tuner:
    """A cubec tuner of one device: chooses the fastest of several candidates per key."""

    def __init__(self, device, name, *, warmup=0, samples=0, memory_only=False):
        self._tuner = _cubec._Tuner(device, name, warmup, samples, memory_only)
        self._last = None

    @property
    def name(self):
        return self._tuner.name

    @property
    def device(self):
        return self._tuner.device

    def choose(self, key, candidates, *, stream=None, checksum=0):
        """The fastest candidate for `key`: remembered, read from disk, or measured now."""
        pairs = _pairs(candidates)
        index, source, median_ns = self._tuner.choose(key, pairs, stream, checksum)
        self._last = pairs
        name, candidate = pairs[index]
        return TuneResult(index, name, candidate, source, median_ns)

    def outcomes(self):
        """{name: outcome dict} for the candidates of the last choose(): state ('timed',
        'rejected', 'not_run'), code, median_ns, min_ns, samples, reason."""
        if self._last is None:
            return {}
        return {name: self._tuner.outcome(i) for i, (name, _) in enumerate(self._last)}

    def close(self):
        """Destroys the tuner now (also done when it is collected); choices on disk stay."""
        self._tuner.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
