"""`GraphStore.summarized` on every backend: each summary's sources (the other ends of its
out-going ``summarizes`` edges) with their backchannel flags, as `edges` and `is_chatter` give
them one by one; `build_context` reads them so for the summaries it shows."""

from __future__ import annotations

import numpy as np

from shared_core import MemoryNode, Partition
from shared_core.store.contract import WriteBatch
from shared_core.values.model import Relation

from .conftest import PART_DIM

TEXTS = ["Kate: I went hiking on Sunday", "Sam: lol", "Kate: the view from the top was great",
         "Summary: Kate hiked on Sunday", "Summary: nothing yet", "Kate: next week I am going to Lisbon"]
IDS = ["t0", "t1", "t2", "s0", "s1", "t5"]


def _write(part: Partition) -> None:
    def build(first: int) -> list[MemoryNode]:
        return [MemoryNode(id=i, content=text, namespace=part.namespace, session_id="s", turn=first + j,
                           accessed_turn=first + j, timestamp=float(j), kind="summary" if i[0] == "s" else "fact")
                for j, (i, text) in enumerate(zip(IDS, TEXTS, strict=True))]

    part.write_batch(WriteBatch(build=build, vectors=np.eye(len(IDS), PART_DIM, dtype=np.float32), similar_top=0,
                                min_similarity=0.5, link_temporal=True, links=[()] * len(IDS), created_at=0.0))
    # s0 summarises t0, t1 (a backchannel) and t2; t2 also summarises s0 (an in-edge of s0's, not
    # a source); t5 points at s1 with another relation
    part.graph.put_links([("s0", "t0", Relation.SUMMARIZES, 1.0), ("s0", "t1", Relation.SUMMARIZES, 1.0),
                          ("s0", "t2", Relation.SUMMARIZES, 1.0), ("t2", "s0", Relation.SUMMARIZES, 1.0),
                          ("t5", "s1", Relation.RELATED_TO, 0.5)], created_at=1.0)


def test_the_sources_of_summaries_with_their_flags(part: Partition) -> None:
    _write(part)
    found = part.graph.summarized(["s0", "s1", "unknown", "t2"])
    assert {i: sorted(v) for i, v in found.items()} == {
        "s0": [("t0", False), ("t1", True), ("t2", False)], "s1": [], "unknown": [], "t2": [("s0", False)]}
    one_by_one = {i: sorted((e.target, part.graph.is_chatter(e.target)) for e in part.graph.edges(i)
                            if e.relation is Relation.SUMMARIZES and e.source == i) for i in ("s0", "s1", "t2")}
    assert {i: sorted(found[i]) for i in one_by_one} == one_by_one
    assert part.graph.summarized([]) == {}
