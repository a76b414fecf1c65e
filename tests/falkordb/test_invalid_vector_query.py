"""A vector query the server refuses for its own arguments fails at once, with the reason.

A read refused with "Invalid arguments for procedure 'db.idx.vector.queryNodes'" is waited on
(up to the settings' ``timeout``) because FalkorDB refuses a valid vector query so while it
builds the graph's vector index (`test_restart_indexes.py`); the same words for a query whose
arguments are wrong, on a graph whose index is built, must not cost that wait. A query vector of
the wrong dimension is refused in other words ("Vector dimension mismatch"), also at once.
"""

from __future__ import annotations

import time

import numpy as np
import pytest

from shared_core import BackendError
from shared_core.store.contract import CandidateQuery
from shared_core.store.falkordb import FalkorDBBackend
from shared_core.store.falkordb.client import INVALID_VECTOR_QUERY

DIM = 8
# k = 0 is an invalid argument of the vector procedure
INVALID = ("CALL db.idx.vector.queryNodes('Embedding', 'embedding', 0, vecf32($query)) YIELD node, score "
           "RETURN node.id, score")


@pytest.fixture
def backend(prefixed_url: str) -> FalkorDBBackend:
    # a long timeout: a wait for the index would show as seconds
    return FalkorDBBackend.from_url(f"{prefixed_url}&timeout=20", dim=DIM)


def _vector(dim: int) -> list[float]:
    return np.linspace(0.1, 1.0, dim).astype(np.float32).tolist()


def test_an_invalid_vector_query_fails_at_once_on_a_built_index(backend: FalkorDBBackend) -> None:
    part = backend.partition("ns", create=True)
    assert part is not None
    key = part.graph_key
    params = {"query": _vector(DIM)}
    for ask in (lambda: key.read(INVALID, params), lambda: key.read_many([(INVALID, params)]),
                lambda: backend.conn.exists_and_read(key.key, [(INVALID, params)])):
        started = time.monotonic()
        with pytest.raises(BackendError) as err:
            ask()
        assert time.monotonic() - started < 2.0, "waited as for an index being built"
        assert "Invalid arguments" in str(err.value) and INVALID_VECTOR_QUERY in str(err.value)


def test_a_query_vector_of_the_wrong_dimension_fails_at_once(backend: FalkorDBBackend) -> None:
    part = backend.partition("ns", create=True)
    assert part is not None
    wrong = np.ones(DIM + 3, dtype=np.float32)
    query = CandidateQuery(vector=wrong, text="", k=5, vector_k=10, keyword_k=0, keywords=False)
    started = time.monotonic()
    with pytest.raises(BackendError, match="dimension"):
        part.candidates(query, lambda _: True)
    assert time.monotonic() - started < 2.0


def test_a_valid_vector_query_still_answers(backend: FalkorDBBackend) -> None:
    part = backend.partition("ns", create=True)
    assert part is not None
    assert backend.conn.built(part.graph_key.key)
    assert not backend.conn.built(backend.key("never-made"))
