"""A new namespace's first write waits until the server has built its indexes.

FalkorDB builds an index on one thread per server, after the statement that created it has
returned. A node written to a label whose index is still being built is indexed twice, by the
write and again by the build, and the vector index keeps the first copy as a stale entry that
still counts towards k: a k-nearest search then answers fewer than k hits (none for k = 1),
for good. Under load that thread falls behind, so this was seen as an empty vector search right
after a few writes (``tests/contract/test_partition.py`` on the cluster, twice in full runs at a
load of 10 to 17). Here the thread is kept busy on purpose: another namespace's index over
`BUSY` nodes, created just before the new namespace's, is built first.
"""

from __future__ import annotations

import numpy as np
import pytest

from shared_core import BackendError
from shared_core.store.falkordb import FalkorDBBackend
from shared_core.store.falkordb import cypher as q

DIM = 8
BUSY = 100_000  # nodes whose index the server builds first: a few tenths of a second on two cores


def _statuses(backend: FalkorDBBackend, namespace: str) -> dict[str, str]:
    """Each index's label and status ("OPERATIONAL" once built) in a namespace's graph."""
    return {str(label): str(status) for label, _, status in backend.conn.run(backend.key(namespace), q.INDEX_STATES)}


def _keep_the_index_thread_busy(backend: FalkorDBBackend) -> None:
    """Create an index over `BUSY` nodes of namespace "busy": the server builds it first."""
    busy = backend.partition("busy", create=True)
    assert busy is not None
    busy.graph_key.write(f"UNWIND range(1, {BUSY}) AS i CREATE (:Busy {{v: i}})")
    busy.graph_key.write("CREATE INDEX FOR (b:Busy) ON (b.v)")
    # the premise: the server's index thread is busy when the new namespace's indexes are made
    assert _statuses(backend, "busy")["Busy"] != "OPERATIONAL", "built at once: the race is not provoked"


def test_the_first_write_of_a_namespace_waits_for_its_indexes(prefixed_url: str) -> None:
    backend = FalkorDBBackend.from_url(prefixed_url, dim=DIM)
    _keep_the_index_thread_busy(backend)
    part = backend.partition("fresh", create=True)
    assert part is not None
    assert set(_statuses(backend, "fresh").values()) == {"OPERATIONAL"}
    ids = [f"n{i}" for i in range(6)]
    part.vectors.add(ids, np.eye(6, DIM, dtype=np.float32))
    query = np.eye(1, DIM, dtype=np.float32)[0]
    assert part.vectors.search(query, 1) == [("n0", pytest.approx(1.0))]
    assert sorted(i for i, _ in part.vectors.search(query, 6)) == ids
    backend.close()


def test_indexes_not_built_in_time_fail_the_write_and_a_later_one_waits_again(prefixed_url: str) -> None:
    """The wait is bounded by the settings' ``timeout``; the namespace it gave up on is not
    handed out, so the next request waits for its indexes again (as a graph this process has not
    seen) before anything is written to it."""
    backend = FalkorDBBackend.from_url(prefixed_url, dim=DIM)
    impatient = FalkorDBBackend.from_url(f"{prefixed_url}&timeout=0.05", dim=DIM)
    _keep_the_index_thread_busy(backend)
    with pytest.raises(BackendError, match=r"has not built the indexes of .*Embedding"):
        impatient.partition("fresh", create=True)
    assert "fresh" not in impatient._parts
    impatient.close()
    part = backend.partition("fresh", create=True)
    assert part is not None and set(_statuses(backend, "fresh").values()) == {"OPERATIONAL"}
    backend.close()

