"""A context that shows a summary reads the sources of its summaries in one statement
(`GraphStore.summarized`, `cypher.SUMMARIZED`), not each summary's edges and each source's
backchannel flag one request at a time, and leaves out as before a summary whose details it
shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.formulas.chatter import contentless
from shared_core.store.falkordb import cypher as q
from shared_core.store.falkordb.client import GraphKey

DIM = 64  # the shared atlas's embedder
TEXTS = ["Hi! We booked the hotel in Porto for May 3.", "Thanks!", "Train to Porto leaves at 7:05 on May 2.",
         "Ana will meet us at the Porto station.", "The Porto hotel has breakfast included."]


def _near(base: np.ndarray, scale: float, seed: int) -> np.ndarray:
    noise = np.random.default_rng(seed).normal(size=base.shape)
    v = base + scale * noise / np.linalg.norm(noise)
    return v / np.linalg.norm(v)  # type: ignore[no-any-return]


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    seen: list[str] = []
    read, read_many = GraphKey.read, GraphKey.read_many

    def one(self: GraphKey, query: str, params: Any = None) -> Any:
        seen.append(query)
        return read(self, query, params)

    def many(self: GraphKey, statements: Any) -> Any:
        seen.extend(query for query, _ in statements)
        return read_many(self, statements)

    monkeypatch.setattr(GraphKey, "read", one)
    monkeypatch.setattr(GraphKey, "read_many", many)
    return seen


def test_a_shown_summarys_sources_are_read_in_one_statement(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                            clock: ManualClock,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    atlas = shared_atlas(similar_threshold=0.5, merge_threshold=0.999)
    trip = np.eye(DIM)[3]
    ids = [atlas.add_memory(t, namespace="u", session_id="trip", embedding=_near(trip, 0.5, i)).id
           for i, t in enumerate(TEXTS)]
    atlas.add_memory("Unrelated: the cat needs a vet appointment", namespace="u", session_id="trip",
                     embedding=np.eye(DIM)[9])
    clock.advance(days=40)  # the details fade below summary_below: one summary of the cluster
    [summary] = [s for s in atlas.compress().summaries if s.kind == "cluster"]
    assert set(summary.members) == set(ids)
    facts = {i for i, text in zip(ids, TEXTS, strict=True) if not contentless(text)}
    reads = _reads(monkeypatch)
    seen_summary = False
    for budget in (30, 60, 100, 400):
        reads.clear()
        ctx = atlas.build_context("when is the Porto hotel", namespace="u", token_budget=budget, style="bullet",
                                  reinforce=False)
        shown = {m.node.id for m in ctx.memories}
        assert summary.summary_id not in shown or not facts <= shown, budget  # never beside all its details
        asked = [r for r in reads if "SUMMARIZES" in r]
        assert not [r for r in reads if r in (q.GET_CHATTER, q.EDGES, q.EDGES_AMONG)], budget
        if asked:
            seen_summary = True
            assert len(asked) <= 2, budget  # once, and again only for a summary shown after a rebuild
    assert seen_summary  # some budget showed the summary (or weighed it against its details)
    assert q.SUMMARIZED.startswith("UNWIND $ids")
    assert facts <= shown and "Summaries:" not in ctx.text  # room for every detail: the details only
