"""MiniLMEmbedder's text cache and batching, with the model replaced by a counting stand-in.

The real model's vectors are checked in tests/integration/test_offline_components.py; here the
point is the bookkeeping: order, duplicates, copies, bounds and threads.
"""

from __future__ import annotations

import threading
import zlib

import numpy as np
import pytest

from shared_core import MiniLMEmbedder
from shared_core.values.errors import InvalidInputError


class _Counting:
    """Stands in for MiniLMEmbedder._compute: a vector from the text's crc32, calls recorded."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []
        self.lock = threading.Lock()

    def __call__(self, texts: list[str]) -> np.ndarray:
        with self.lock:
            self.calls.append(list(texts))
        out = np.zeros((len(texts), 384), dtype=np.float32)
        for i, t in enumerate(texts):
            out[i, zlib.crc32(t.encode()) % 384] = 1.0
        return out


def _embedder(**kwargs: int) -> tuple[MiniLMEmbedder, _Counting]:
    e = MiniLMEmbedder(**kwargs)
    fake = _Counting()
    e._session = object()  # loaded: embed never calls _load
    e._compute = fake  # type: ignore[method-assign]
    return e, fake


def _expected(texts: list[str]) -> np.ndarray:
    return _Counting()(texts)


def test_rows_keep_the_callers_order_and_repeats_are_computed_once() -> None:
    e, fake = _embedder(cache_size=16)
    texts = ["b", "a", "b", "c", "a"]
    assert np.array_equal(e.embed(texts), _expected(texts))
    assert fake.calls == [["b", "a", "c"]]
    assert np.array_equal(e.embed(["c", "z", "b"]), _expected(["c", "z", "b"]))
    assert fake.calls[-1] == ["z"]
    assert e.cache_info() == (2, 4, 4)


def test_callers_cannot_change_the_cache() -> None:
    e, _ = _embedder(cache_size=4)
    first = e.embed(["oat milk"])
    first[:] = 7.0
    second = e.embed(["oat milk"])
    assert np.array_equal(second, _expected(["oat milk"]))
    second[0, 0] = 3.0
    assert np.array_equal(e.embed(["oat milk"]), _expected(["oat milk"]))
    assert e.cache_info()[0] == 2


def test_the_cache_is_a_bounded_lru_and_long_texts_stay_out() -> None:
    e, fake = _embedder(cache_size=2, cache_chars=10)
    e.embed(["one", "two"])
    e.embed(["one"])  # "one" is now the most recent
    e.embed(["three"])  # evicts "two"
    assert e.cache_info()[2] == 2
    fake.calls.clear()
    e.embed(["one", "two", "three"])
    assert fake.calls == [["two"]]
    fake.calls.clear()
    e.embed(["x" * 11])
    e.embed(["x" * 11])
    assert fake.calls == [["x" * 11], ["x" * 11]]


def test_a_zero_cache_computes_every_call() -> None:
    e, fake = _embedder(cache_size=0)
    e.embed(["a"])
    e.embed(["a"])
    assert len(fake.calls) == 2 and e.cache_info() == (0, 0, 0)
    assert e.embed([]).shape == (0, 384)


def test_threads_share_one_cache() -> None:
    e, _ = _embedder(cache_size=64)
    texts = [f"text {i % 40}" for i in range(400)]
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            chunk = texts[offset:] + texts[:offset]
            for start in range(0, len(chunk), 7):
                part = chunk[start:start + 7]
                assert np.array_equal(e.embed(part), _expected(part))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i * 13,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert e.cache_info()[2] == 40


@pytest.mark.parametrize(("name", "bad"), [("batch_size", 0), ("cache_size", -1), ("cache_chars", -1),
                                           ("threads", 0), ("batch_size", True), ("cache_size", 1.5),
                                           ("spin", 1), ("spin", "no"), ("spin", None)])
def test_settings_are_checked(name: str, bad: object) -> None:
    with pytest.raises(InvalidInputError, match=name):
        MiniLMEmbedder(**{name: bad})  # type: ignore[arg-type]
