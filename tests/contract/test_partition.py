"""The `Partition` seam on every backend: write counter, session order, time index, superseded
set, and reinforce/fade against the pure formulas of `shared_core.formulas.decay`."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from shared_core import AtlasConfig, MemoryNode, Partition
from shared_core.formulas.decay import decayed_weight, reinforced_weight, rich_weight
from shared_core.store.contract import WriteBatch

from .conftest import PART_DIM

DIM = PART_DIM  # the `part` fixture's (conftest)


def _store(part: Partition, node_id: str, session: str | None, timestamp: float, **fields: Any) -> MemoryNode:
    node = MemoryNode(id=node_id, content=f"text of {node_id}", namespace="ns", session_id=session,
                      timestamp=timestamp, created_at=timestamp, last_accessed_at=timestamp, **fields)
    part.graph.put_node(node)
    vector = np.zeros(DIM, dtype=np.float32)
    vector[sum(map(ord, node_id)) % DIM] = 1.0
    part.vectors.add([node_id], vector[None, :])
    part.keywords.add(node_id, node.content, session_id=session)
    part.track(node_id, session, timestamp)
    return node


def test_turns_are_reserved_in_blocks_and_roll_back(part: Partition) -> None:
    assert part.turn == 0
    assert part.next_turn() == 1 and part.next_turn(3) == 2 and part.turn == 4
    part.turn = 1  # a failed write gives its turns back
    assert part.turn == 1 and part.next_turn() == 2


def _batch(first_id: int, count: int, *, built: list[int] | None = None, dim: int = DIM) -> WriteBatch:
    """A `WriteBatch` of ``count`` memories of session "s" (ids ``b<first_id>``...); ``built``
    collects each turn ``build`` is called with."""
    def build(first: int) -> list[MemoryNode]:
        if built is not None:
            built.append(first)
        return [MemoryNode(id=f"b{first_id + j}", content=f"batch text {first_id + j}", namespace="ns",
                           session_id="s", timestamp=100.0 + j, created_at=100.0, last_accessed_at=100.0,
                           turn=first + j, accessed_turn=first + j) for j in range(count)]

    vectors = np.eye(count, dim, dtype=np.float32)
    return WriteBatch(build=build, vectors=vectors, similar_top=2, min_similarity=0.5, link_temporal=True,
                      links=[()] * count, created_at=100.0)


def test_a_batch_write_reserves_its_turns(part: Partition) -> None:
    """`write_batch` takes the next turns itself, builds the nodes from the first and returns them
    as stored; a batch whose write fails gives its turns back."""
    assert part.next_turn(2) == 1
    stored = part.write_batch(_batch(0, 3))
    assert [n.turn for n in stored] == [3, 4, 5] and [n.accessed_turn for n in stored] == [3, 4, 5]
    assert part.turn == 5 and [part.graph.get_node(n.id) for n in stored] == stored
    assert part.latest("s", 3) == ["b2", "b1", "b0"]
    assert [(e.source, e.target) for e in part.graph.edges("b1") if e.relation.value == "before"] == \
        [("b1", "b2"), ("b0", "b1")]
    built: list[int] = []
    with pytest.raises(ValueError):  # vectors of the wrong width: refused part-way
        part.write_batch(_batch(10, 2, built=built, dim=DIM + 1))
    assert built and part.turn == 5  # the failed write's turns are given back
    assert [n.turn for n in part.write_batch(_batch(20, 1))] == [6]


def test_sessions_latest_and_time_ranges(part: Partition) -> None:
    for i, (session, ts) in enumerate([("a", 30.0), (None, 10.0), ("a", 20.0), ("b", 20.0), ("a", 5.0)]):
        _store(part, f"n{i}", session, ts)
    assert list(part.sessions) == ["a", None, "b"]
    assert list(part.sessions.get("a", ())) == ["n0", "n2", "n4"] and "b" in part.sessions
    assert list(dict(part.sessions.items())[None]) == ["n1"] and part.sessions.get("zz") is None
    assert part.latest("a", 2) == ["n4", "n2"] and part.latest(None, 5) == ["n1"] and part.latest("zz", 3) == []
    assert part.between(10.0, 30.0) == ["n1", "n2", "n3"] and part.between(0, 100) == ["n4", "n1", "n2", "n3", "n0"]
    part.sessions["a"] = dict.fromkeys(["n4", "n0", "n2"])  # compression moves a summary before its members
    assert list(part.sessions["a"]) == ["n4", "n0", "n2"] and part.latest("a", 1) == ["n2"]
    part.graph.remove_node("n2")
    part.untrack("n2", "a", 20.0)
    assert list(part.sessions["a"]) == ["n4", "n0"] and part.between(20.0, 21.0) == ["n3"]


def test_superseded_ids_behave_as_a_set(part: Partition) -> None:
    for i in range(4):
        _store(part, f"n{i}", "s", float(i))
    assert len(part.inactive) == 0 and "n1" not in part.inactive
    part.inactive.add("n1")
    part.inactive.add("n3")
    assert "n1" in part.inactive and len(part.inactive) == 2 and sorted(part.inactive) == ["n1", "n3"]
    subset = {"n0", "n1", "n2"}
    subset -= part.inactive
    assert subset == {"n0", "n2"}
    part.untrack("n3", "s", 3.0)
    assert sorted(part.inactive) == ["n1"]


def test_indexes_answer_like_the_in_process_ones(part: Partition) -> None:
    for i in range(6):
        _store(part, f"n{i}", "s" if i % 2 else "t", float(i))
    query = np.zeros(DIM, dtype=np.float32)
    query[sum(map(ord, "n3")) % DIM] = 1.0
    assert part.vectors.search(query, 1)[0] == ("n3", pytest.approx(1.0))
    assert [i for i, _ in part.vectors.search(query, 3, subset={"n0", "n3"})] == ["n3", "n0"]
    assert part.vectors.similarities(query, ["n3", "missing"]).tolist() == pytest.approx([1.0, 0.0])
    assert np.array_equal(part.vectors.get("n3"), query) and part.vectors.get("missing") is None
    assert [i for i, _ in part.keywords.search("text of n4", 3)][:1] == ["n4"]
    assert {i for i, _ in part.keywords.search("text", 10, session_id="s")} == {"n1", "n3", "n5"}
    assert {i for i, _ in part.keywords.search("text", 10, subset={"n0", "n5"})} == {"n0", "n5"}


@pytest.mark.parametrize("config", [
    AtlasConfig(half_life=100.0),
    AtlasConfig(half_life=3.0, decay_unit="turns"),
    AtlasConfig.rich(half_life=100.0),
    AtlasConfig(half_life=100.0, reinforce_factor=2.5, weight_cap=2.0),
], ids=["seconds", "turns", "rich", "capped"])
def test_reinforce_and_fade_follow_the_pure_formulas(part: Partition, config: AtlasConfig) -> None:
    _store(part, "a", "s", 1000.0, weight=1.5, importance=1.5, access_count=2)
    _store(part, "p", "s", 1000.0, weight=0.8, pinned=True)
    part.next_turn(7)
    now = 1250.0
    elapsed = 7.0 if config.decay_unit == "turns" else 250.0
    if config.weight_model == "rich":
        current = rich_weight(1.5, 2, elapsed, half_life=config.half_life, floor=config.weight_floor,
                              cap=config.weight_cap)
    else:
        current = decayed_weight(1.5, elapsed, half_life=config.half_life, floor=config.weight_floor)
    done = part.reinforce("a", now=now, config=config)
    assert done is not None and done == part.graph.get_node("a")
    assert done.weight == pytest.approx(reinforced_weight(current, factor=config.reinforce_factor,
                                                          cap=config.weight_cap), rel=1e-12)
    assert (done.access_count, done.last_accessed_at, done.accessed_turn) == (3, now, 7)
    pinned = part.reinforce("p", now=now, config=config)  # pinned: no decay before the boost
    expected = 0.8 if config.weight_model == "simple" else rich_weight(1.0, 0, 0.0, half_life=config.half_life,
                                                                         floor=config.weight_floor,
                                                                         cap=config.weight_cap)
    assert pinned is not None and pinned.weight == pytest.approx(
        min(config.weight_cap, expected * config.reinforce_factor), rel=1e-12)
    faded = part.fade("a", 0.01, now=now + 100, config=config)
    assert faded is not None and faded.weight >= config.weight_floor and faded.access_count == 3
    assert part.reinforce("missing", now=now, config=config) is None
    assert math.isfinite(faded.weight)
