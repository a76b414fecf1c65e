"""FalkorDB's pruned BM25 for a query whose terms are all heavy (`cypher.bm25_heavy`: at most six
terms some document holds, counted with their repeats in the query) gives the in-process top k
exactly, where its shortcut could go wrong: a document outside the seeds is ranked on one term's
share, not scored again. Cases: many documents of one length holding one query term once (equal
shares: ties across the k-th place, the earlier first), the same term twice in a document (a
larger share), documents holding two query terms that rank below the seeds' top k (found again
by step 3 with one share only), a term twice in the query, fewer documents holding a pair than
k (no bound: every document of every term read), a session filter and a subset of ids."""

from __future__ import annotations

from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
from shared_core.store.falkordb import FalkorDBBackend, cypher, indexes

FILL = [f"fill{i}" for i in range(60)]


def _texts() -> list[str]:
    """Documents of mostly four terms: each query word alone in many (ties), twice in some, and
    pairs of query words in long documents (small shares: outside the seeds' top k)."""
    out: list[str] = []
    for i in range(24):
        out.append(f"alpha {FILL[i]} {FILL[i + 1]} {FILL[i + 2]}")  # one term once, all of one length
        out.append(f"beta {FILL[i + 3]} {FILL[i + 4]} {FILL[i + 5]}")
        out.append(f"gamma {FILL[i + 6]} {FILL[i + 7]} {FILL[i + 8]}")
    for i in range(5):
        out.append(f"alpha alpha {FILL[i]} {FILL[i + 9]}")  # twice: a larger share
        out.append(f"beta beta beta {FILL[i + 10]}")
    for i in range(6):  # two query terms, long: scored in step 1, most below its top k
        out.append("alpha beta " + " ".join(FILL[i:i + 20 + 3 * i]))
        out.append("beta gamma " + " ".join(FILL[i + 1:i + 30]))
    out.append("alpha beta gamma delta")  # every query term, short: the best
    out += [out[0], out[1], out[50]]  # exact duplicates: equal scores, the earlier first
    out += [" ".join(FILL[i:i + 4]) for i in range(40)]  # no query term
    return out


QUERIES = ["alpha beta", "alpha beta gamma", "alpha alpha beta", "gamma delta", "alpha beta gamma delta fill3",
           "beta beta", "delta", "alpha absentword"]


@pytest.fixture(params=["postings counted", "counts kept"])
def atlases(request: pytest.FixtureRequest, prefixed_url: str, clock: ManualClock,
            monkeypatch: pytest.MonkeyPatch) -> tuple[ElasticMemoryAtlas, ElasticMemoryAtlas]:
    """The in-process atlas and a FalkorDB one of the same memories (four sessions), every search
    of the latter pruned (two statements, whatever the size)."""
    monkeypatch.setattr(indexes, "ONE_STATEMENT_BELOW", 0)
    monkeypatch.setattr(indexes, "PRUNE_FROM", 0)
    monkeypatch.setattr(indexes, "PRUNE_PER_HIT", 0)
    server: str | FalkorDBBackend = prefixed_url if request.param == "postings counted" else \
        FalkorDBBackend.from_url(prefixed_url, dim=64, term_counts_from=1)
    out = []
    for backend in (None, server):
        atlas = ElasticMemoryAtlas(config=AtlasConfig(keyword_weight=0.6, vector_weight=0.4),
                                   embedder=HashingEmbedder(dim=64), clock=clock, backend=backend)
        texts = _texts()
        for s in range(4):
            atlas.add_memories([t for i, t in enumerate(texts) if i % 4 == s], namespace="p", session_id=f"s{s}")
        out.append(atlas)
    return out[0], out[1]


@pytest.fixture
def chosen(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the top-k statements the FalkorDB searches sent."""
    names: list[str] = []
    plain = indexes.FalkorKeywordIndex.top_statement

    def spy(plan: dict[str, Any]) -> Any:
        names.append(plan["top"])
        return plain(plan)

    monkeypatch.setattr(indexes.FalkorKeywordIndex, "top_statement", staticmethod(spy))
    return names


def _turns(*atlases: ElasticMemoryAtlas) -> dict[str, int]:
    out: dict[str, int] = {}
    for atlas in atlases:
        part = atlas.backend.partition("p")
        assert part is not None
        out.update({n.id: n.turn for n in part.graph.nodes()})
    return out


def _search(atlas: ElasticMemoryAtlas, query: str, k: int, turn: dict[str, int], **options: Any
            ) -> list[tuple[int, float]]:
    part = atlas.backend.partition("p")
    assert part is not None
    return [(turn[i], s) for i, s in part.keywords.search(query, k, **options)]


def _same(got: list[tuple[int, float]], want: list[tuple[int, float]], what: object) -> None:
    assert [t for t, _ in got] == [t for t, _ in want], what
    assert [s for _, s in got] == pytest.approx([s for _, s in want], rel=1e-13), what


def test_the_heavy_top_k_is_the_in_process_one(atlases: tuple[ElasticMemoryAtlas, ElasticMemoryAtlas],
                                               chosen: list[str]) -> None:
    here, there = atlases
    turn = _turns(here, there)
    for query in QUERIES:
        for k in (1, 2, 3, 5, 8, 13, 30, 500):
            for session in (None, "s1"):
                want = _search(here, query, k, turn, session_id=session)
                _same(_search(there, query, k, turn, session_id=session), want, (query, k, session))
    assert "heavy" in chosen and "pruned" not in chosen


def test_the_heavy_top_k_among_a_subset(atlases: tuple[ElasticMemoryAtlas, ElasticMemoryAtlas],
                                        chosen: list[str]) -> None:
    here, there = atlases
    turn = _turns(here, there)
    subsets = [{n.id for n in a.backend.partition("p").graph.nodes() if n.turn % 3 != 0}  # type: ignore[union-attr]
               for a in (here, there)]
    for query in QUERIES:
        for k in (1, 3, 8, 500):
            for session in (None, "s2"):
                want = _search(here, query, k, turn, subset=subsets[0], session_id=session)
                got = _search(there, query, k, turn, subset=subsets[1], session_id=session)
                _same(got, want, (query, k, session))
    assert "heavy" in chosen


def test_more_terms_than_the_heavy_ones_use_the_general_statement(
        atlases: tuple[ElasticMemoryAtlas, ElasticMemoryAtlas], chosen: list[str]) -> None:
    """Seven terms some document holds: the lightest is no seed's, so `cypher.bm25` runs."""
    here, there = atlases
    turn = _turns(here, there)
    query = "alpha beta gamma delta fill1 fill2 fill3"
    for k in (1, 5, 40):
        _same(_search(there, query, k, turn), _search(here, query, k, turn), k)
    assert chosen and set(chosen) == {"pruned"}


def test_the_statement_names() -> None:
    assert "bm25_heavy" in cypher.__all__
    plan = indexes.FalkorKeywordIndex.plan(["a", "b", "a"], [[10000, 40000, "a", 3000], [10000, 40000, "b", 4000]], 1)
    assert plan is not None and plan["top"] == "heavy" and plan["light"] == 0.0
    plan = indexes.FalkorKeywordIndex.plan(list("abcdefg"), [[10000, 40000, t, 3000] for t in "abcdefg"], 1)
    assert plan is not None and plan["top"] == "pruned" and plan["light"] > 0.0
