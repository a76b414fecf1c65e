"""FalkorDB's vector index declares a wider batch for recall's ranking than a store in process
(`VectorIndex.cosine_batch`, `indexes.COSINE_BATCH`): the ranking names the memories it may resolve
next and their cosines come with the request it makes, so the memories only the graph walk reached
are resolved in fewer requests, with the same answer; and a call's cosines with another query (a
speaker path's sub-query) do not displace its own."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from shared_core import ElasticMemoryAtlas
from shared_core.engine.recall import RecallRequest, _rank
from shared_core.store.falkordb import FalkorPartition, indexes

from ._probes import round_trips


def test_the_ranking_resolves_in_fewer_requests(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = shared_atlas()
    written = atlas.add_memories([f"note {i} about topic {i % 7}" for i in range(120)], namespace="c")
    part = atlas.backend.partition("c")
    assert isinstance(part, FalkorPartition)
    assert part.vectors.cosine_batch == indexes.COSINE_BATCH > 16
    query = atlas.embedder.embed(["topic 3"])[0]
    exact = {n.id: 0.2 for n in written[:10]}
    bounds = {n.id: 1.0 for n in written[10:]}  # graph-only: every bound above every exact relevance

    def ranked() -> tuple[list[tuple[float, str]], int]:
        part.begin(None)
        part.remember_cosines(query, {})  # a recall's candidates: the call's query
        part.remember_cosines(atlas.embedder.embed(["a speaker's sub-query"])[0], {written[0].id: 0.5})
        for node in written:  # the nodes held: the requests counted are the cosines'
            part.graph.get_node(node.id)

        def resolve(ids: list[str], ahead: list[str]) -> dict[str, float]:
            return dict(zip(ids, part.vectors.similarities(query, ids, ahead=ahead).tolist(), strict=True))

        req = RecallRequest(query="topic 3", vector=query, now=atlas.clock.now(), top_k=5)
        with round_trips(monkeypatch) as seen:
            got = _rank(part, exact, bounds, resolve, req, atlas.config, lambda _: True)
        return [(s, n.id) for s, n, _ in got], len(seen)

    wide, wide_requests = ranked()
    monkeypatch.setattr(indexes, "COSINE_BATCH", 16)
    assert part.vectors.cosine_batch == 16
    narrow, narrow_requests = ranked()
    assert wide == narrow
    assert wide_requests < narrow_requests, (wide_requests, narrow_requests)
