"""The backend's one-round-trip recall (`FalkorPartition.candidates` and `expand`) gives exactly
what the contract's portable defaults (`PartitionBase`) give over the same server."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.store.base import PartitionBase
from shared_core.store.contract import CandidateQuery, WalkSpec
from shared_core.store.falkordb import FalkorPartition
from shared_core.values.model import Relation

TOPICS = ("coffee and milk", "trains to Lyon", "the dentist on Friday", "a red bicycle", "chess openings")


def _partition(atlas: ElasticMemoryAtlas) -> FalkorPartition:
    part = atlas.backend.partition("p")
    assert isinstance(part, FalkorPartition)
    return part


def _admit(node_id: str) -> bool:  # some memories are not admitted, as a filter would do
    return not node_id.endswith("0")


def test_candidates_and_walk_match_the_defaults(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                clock: ManualClock) -> None:
    atlas = shared_atlas()
    for i in range(60):
        clock.advance(60)
        atlas.add_memory(f"note {i} about {TOPICS[i % 5]} and {TOPICS[(i * 3) % 5]}", namespace="p",
                         session_id=f"s{i % 4}")
    gone = [h.node.id for h in atlas.retrieve("chess openings", namespace="p", top_k=2, reinforce=False)]
    atlas.forget(gone[0])  # a deleted vector: the search asks past the stale entry
    start = clock.now() - 1800
    for text in ("coffee", "trains and bicycles", "dentist chess", "nothing in common"):
        vector = atlas.embedder.embed([text])[0]
        cq = CandidateQuery(text=text, vector=vector, k=12, vector_k=30, keyword_k=12,
                            time_range=(start, clock.now() + 1), recent_session="s1", recent_n=6, recent_k=5)
        part = _partition(atlas)
        fast = part.candidates(cq, _admit)
        part = _partition(atlas)  # a fresh call: nothing read before
        default = PartitionBase.candidates(part, cq, _admit)
        assert fast.paths == default.paths
        assert list(fast.paths["vector"]) == list(default.paths["vector"])  # order too
        np.testing.assert_array_equal(fast.vector_sims, default.vector_sims)
        assert fast.cosine == default.cosine
        seeds = dict(list(fast.paths["vector"].items())[:5])
        for beam in (None, 3):
            factors = [None if r is Relation.CONTRADICTS else 0.3 + 0.1 * (j % 7) for j, r in enumerate(Relation)]
            spec = WalkSpec(factors=factors, hops=2, decay=0.5, fanout=4,
                            min_activation=0.0, beam=beam)
            part = _partition(atlas)
            walked = part.expand(seeds, spec, lambda i: not i.endswith("1"))
            part = _partition(atlas)
            expected = PartitionBase.expand(part, seeds, spec, lambda i: not i.endswith("1"))
            assert walked == expected
            assert list(walked) == list(expected)
