"""`DictGraphStore` against a plain reference model over random operation sequences (nodes and
edges added, replaced and removed, self-loops, edges naming ids that are not nodes), and the
fast `links` read of every in-process store."""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shared_core import NetworkXGraphStore
from shared_core.store.memory._int_lists import CAPACITIES
from shared_core.store.memory.graph_store import _CODES, DictGraphStore, GraphStore
from shared_core.values.errors import InvalidRelationError
from shared_core.values.model import MemoryEdge, MemoryNode, Relation

IDS = [f"n{i}" for i in range(7)]
RELATIONS = [Relation.BEFORE, Relation.SIMILAR_TO, Relation.CONTRADICTS]
Key = tuple[str, str, Relation]


class Reference:
    """The semantics `DictGraphStore` must keep, written the obvious way."""

    def __init__(self) -> None:
        self.nodes: dict[str, MemoryNode] = {}
        self.edges: dict[Key, MemoryEdge] = {}  # insertion order; a replaced edge keeps its place

    def put_edge(self, edge: MemoryEdge) -> None:
        self.edges[(edge.source, edge.target, edge.relation)] = edge

    def edges_of(self, node_id: str) -> list[MemoryEdge]:
        out = [e for e in self.edges.values() if e.source == node_id]
        return out + [e for e in self.edges.values() if e.target == node_id and e.source != node_id]

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        if self.nodes.pop(node_id, None) is None:
            return []
        removed = self.edges_of(node_id)
        for e in removed:
            del self.edges[(e.source, e.target, e.relation)]
        return removed


NODE = st.tuples(st.just("node"), st.sampled_from(IDS), st.integers(0, 3))
EDGE = st.tuples(st.just("edge"), st.sampled_from(IDS), st.sampled_from(IDS), st.sampled_from(RELATIONS),
                 st.sampled_from([0.25, 0.5, 1.0]), st.sampled_from([{}, {"why": "test"}]))
OPS = st.lists(st.one_of(
    NODE, EDGE, EDGE, EDGE,
    st.tuples(st.just("drop_node"), st.sampled_from(IDS)),
    st.tuples(st.just("drop_edge"), st.sampled_from(IDS), st.sampled_from(IDS), st.sampled_from(RELATIONS)),
), max_size=80)


def _blocks_are_disjoint(store: DictGraphStore) -> None:
    """In each list store, no two lists, nor a list and a free block, share a cell."""
    for lists in (store._out, store._in):
        owner: dict[int, object] = {}
        used = [s for s in range(len(lists.classes)) if lists.classes[s] >= 0]
        spans: list[tuple[int, int, object]] = [(lists.starts[s], CAPACITIES[lists.classes[s]], s) for s in used]
        spans += [(start, CAPACITIES[k], "free") for k, free in enumerate(lists._free) for start in free]
        for start, cap, who in spans:
            for cell in range(start, start + cap):
                assert owner.setdefault(cell, who) == who, f"cell {cell} used by {owner[cell]} and {who}"
        assert all(lists.lengths[s] == 0 for s in range(len(lists.classes)) if lists.classes[s] < 0)


def _check(store: DictGraphStore, ref: Reference) -> None:
    _blocks_are_disjoint(store)
    named = {i for key in ref.edges for i in key[:2]}
    assert set(store._slot) == set(ref.nodes) | named  # a slot for each node or edge end, no more
    assert [n.id for n in store.nodes()] == list(ref.nodes) and store.node_count() == len(ref.nodes)
    assert store.edge_count() == len(ref.edges)
    for i in IDS:
        assert store.get_node(i) == ref.nodes.get(i)
        expected = ref.edges_of(i)
        assert store.edges(i) == expected
        others = [e.target if e.source == i else e.source for e in expected]
        assert store.links(i) == [(o, e.relation, e.strength) for o, e in zip(others, expected, strict=True)]
        assert store.neighbors(i) == [(o, e.strength) for o, e in zip(others, expected, strict=True)]
        assert store.degree(i) == len(expected)


@settings(max_examples=300, deadline=None)
@given(ops=OPS)
def test_dict_store_matches_the_reference(ops: list[tuple[Any, ...]]) -> None:
    store, ref = DictGraphStore(), Reference()
    for step, op in enumerate(ops):
        if op[0] == "node":
            node = MemoryNode(id=op[1], content=f"v{op[2]}", namespace="u")
            store.put_node(node)
            ref.nodes[op[1]] = node
        elif op[0] == "edge":
            edge = MemoryEdge(source=op[1], target=op[2], relation=op[3], strength=op[4], created_at=float(step),
                              metadata=op[5])
            store.put_edge(edge)
            ref.put_edge(edge)
        elif op[0] == "drop_node":
            assert store.remove_node(op[1]) == ref.remove_node(op[1])
        else:
            assert store.remove_edge(op[1], op[2], op[3]) == (ref.edges.pop((op[1], op[2], op[3]), None) is not None)
        _check(store, ref)


def test_slots_and_rows_are_reused_and_dangling_ids_freed() -> None:
    store = DictGraphStore()
    for round_ in range(3):
        for i in IDS:
            store.put_node(MemoryNode(id=i, content=i, namespace="u"))
        for a, b in pairwise(IDS):
            store.put_edge(MemoryEdge(source=a, target=b, relation=Relation.BEFORE, created_at=float(round_)))
        store.put_edge(MemoryEdge(source="n0", target="elsewhere", relation=Relation.RELATED_TO))
        for other in IDS[1:]:  # n0's list outgrows two blocks
            store.put_edge(MemoryEdge(source=other, target="n0", relation=Relation.SIMILAR_TO))
        for i in IDS:
            store.remove_node(i)
        assert store.node_count() == 0 and store.edge_count() == 0 and store.links("elsewhere") == []
        now = store._used, len(store._ends), len(store._out.data) + len(store._in.data)
        if round_ == 0:
            sizes = now
        assert now == sizes  # slots, rows and list blocks are all reused after round 0
    assert store._slot == {}


def test_edges_keep_exact_values_and_reject_unknown_relations() -> None:
    store = DictGraphStore()
    edge = MemoryEdge(source="a", target="b", relation=Relation.SIMILAR_TO, strength=0.1 + 0.2,
                      created_at=1_700_000_000.123456, metadata={"k": [1, 2]})
    store.put_edge(edge)
    assert store.edges("a") == [edge] and store.edges("b")[0].strength == 0.1 + 0.2
    store.put_edge(MemoryEdge(source="a", target="b", relation="similar_to", strength=0.5))  # type: ignore[arg-type]
    assert store.edge_count() == 1 and store.links("b") == [("a", Relation.SIMILAR_TO, 0.5)]
    assert store.edges("a")[0].metadata == {}
    with pytest.raises(InvalidRelationError):
        store.put_edge(MemoryEdge(source="a", target="c", relation="likes"))  # type: ignore[arg-type]
    assert store.edge_count() == 1 and store.get_node("c") is None and "c" not in store._slot


@pytest.mark.parametrize("make", [DictGraphStore, NetworkXGraphStore])
def test_links_follow_edges(make: Callable[[], GraphStore]) -> None:
    store = make()
    for i in "abc":
        store.put_node(MemoryNode(id=i, content=i, namespace="u"))
    store.put_edge(MemoryEdge(source="a", target="b", relation=Relation.BEFORE))
    store.put_edge(MemoryEdge(source="c", target="a", relation=Relation.SIMILAR_TO, strength=0.75))
    store.put_edge(MemoryEdge(source="a", target="a", relation=Relation.RELATED_TO, strength=0.5))
    links = store.links("a")
    assert links == [(e.target if e.source == "a" else e.source, e.relation, e.strength) for e in store.edges("a")]
    assert sorted(links) == [("a", Relation.RELATED_TO, 0.5), ("b", Relation.BEFORE, 1.0),
                             ("c", Relation.SIMILAR_TO, 0.75)]
    assert store.links("missing") == []


@pytest.mark.parametrize("make", [DictGraphStore, NetworkXGraphStore])
def test_has_is_whether_get_node_finds_the_node(make: Callable[[], GraphStore]) -> None:
    store = make()
    for i in "ab":
        store.put_node(MemoryNode(id=i, content=i, namespace="u"))
    store.remove_node("b")
    assert [store.has(i) for i in "abc"] == [store.get_node(i) is not None for i in "abc"] == [True, False, False]


def test_edge_times_come_back_exactly_and_their_table_stays_bounded() -> None:
    from shared_core.store.memory.graph_store import DictGraphStore
    from shared_core.values.model import MemoryEdge, MemoryNode, Relation

    g = DictGraphStore()
    for i in range(3):
        g.put_node(MemoryNode(id=str(i), content=str(i), namespace="u"))
    g.put_links([("0", "1", Relation.BEFORE, 1.0), ("1", "2", Relation.BEFORE, 0.5)], created_at=7.25)
    g.put_edge(MemoryEdge(source="2", target="0", relation=Relation.RELATED_TO, created_at=-0.0))
    g.put_edge(MemoryEdge(source="0", target="2", relation=Relation.RELATED_TO, created_at=0.0))
    times = {(e.source, e.target): e.created_at for e in g.edges("0") + g.edges("2")}
    assert times[("0", "1")] == times[("1", "2")] == 7.25 and len(g._times) == 3  # one write, one time
    assert str(times[("2", "0")]) == "-0.0" and str(times[("0", "2")]) == "0.0"
    for t in range(5000):  # one edge rewritten at 5,000 distinct times: the table is compacted
        g.put_edge(MemoryEdge(source="0", target="1", relation=Relation.BEFORE, created_at=100.0 + t))
    assert len(g._times) <= 2 * g.edge_count() + 1024
    assert {(e.source, e.target): e.created_at for e in g.edges("1")} == {("0", "1"): 5099.0, ("1", "2"): 7.25}


LINK = st.tuples(st.sampled_from([*IDS, "x"]), st.sampled_from([*IDS, "x"]), st.sampled_from(RELATIONS),
                 st.sampled_from([0.25, 0.5, 1.0]))
BATCH_OPS = st.lists(st.one_of(
    NODE, EDGE,
    st.tuples(st.just("links"), st.lists(LINK, max_size=6), st.sampled_from([0.0, 3.5, 3.5, 8.0])),
    st.tuples(st.just("drop_node"), st.sampled_from(IDS)),
    st.tuples(st.just("drop_edge"), st.sampled_from(IDS), st.sampled_from(IDS), st.sampled_from(RELATIONS)),
), max_size=60)


def _internals(store: DictGraphStore) -> tuple[object, ...]:
    columns = tuple(bytes(getattr(store, name)) for name in ("_ends", "_rel", "_strength", "_when", "_times",
                                                              "_free_rows", "_free_slots"))
    lists = tuple(bytes(getattr(lists, name)) for lists in (store._out, store._in)
                  for name in ("data", "starts", "lengths", "classes"))
    return columns, lists, dict(store._slot), list(store._ids), store._edges, store._meta


@settings(max_examples=400, deadline=None)
@given(ops=BATCH_OPS, bulk_links=st.sampled_from([0, 1, 3, DictGraphStore.bulk_links]))
def test_put_links_is_put_edge_one_by_one(ops: list[tuple[Any, ...]], bulk_links: int) -> None:
    """`put_links` (in one step when no edge can be there yet, else edge by edge) leaves the store
    exactly as `put_edge` of each link in order: same rows, lists, slots and time table. The
    batches here are small, so the one-step threshold is lowered to reach that path too."""
    lowered = type("LoweredStore", (DictGraphStore,), {"__slots__": (), "bulk_links": bulk_links})
    batched, single = lowered(), DictGraphStore()
    for step, op in enumerate(ops):
        for store in (batched, single):
            if op[0] == "node":
                store.put_node(MemoryNode(id=op[1], content=f"v{op[2]}", namespace="u"))
            elif op[0] == "edge":
                store.put_edge(MemoryEdge(source=op[1], target=op[2], relation=op[3], strength=op[4],
                                          created_at=float(step), metadata=op[5]))
            elif op[0] == "links" and store is batched:
                store.put_links(op[1], created_at=op[2])
            elif op[0] == "links":
                for source, target, relation, strength in op[1]:
                    store.put_edge(MemoryEdge(source=source, target=target, relation=relation, strength=strength,
                                              created_at=op[2]))
            elif op[0] == "drop_node":
                store.remove_node(op[1])
            else:
                store.remove_edge(op[1], op[2], op[3])
        assert _internals(batched) == _internals(single)
        for i in [*IDS, "x"]:
            assert batched.edges(i) == single.edges(i)


def test_put_links_checks_every_link_first() -> None:
    store = DictGraphStore()
    for i in IDS[:3]:
        store.put_node(MemoryNode(id=i, content=i, namespace="u"))
    before = _internals(store)
    with pytest.raises(InvalidRelationError):
        store.put_links([("n0", "n1", Relation.BEFORE, 1.0), ("n1", "n2", "likes", 1.0)],  # type: ignore[list-item]
                        created_at=1.0)
    assert _internals(store) == before
    store.put_links([("n0", "n1", "before", 1.0), ("n1", "n1", Relation.SIMILAR_TO, 0.5)],  # type: ignore[list-item]
                    created_at=1.0)
    assert store.links("n1") == [("n1", Relation.SIMILAR_TO, 0.5), ("n0", Relation.BEFORE, 1.0)]


def test_put_links_takes_any_rows_of_four_and_refuses_others() -> None:
    """Tuples of four go by columns; other rows (lists here) through zip, with the same result."""
    stores = [DictGraphStore(), DictGraphStore()]
    for store in stores:
        for i in IDS[:3]:
            store.put_node(MemoryNode(id=i, content=i, namespace="u"))
    links = [("n0", "n1", Relation.BEFORE, 1.0), ("n1", "n2", Relation.SIMILAR_TO, 0.75)]
    stores[0].put_links(links, created_at=1.0)
    stores[1].put_links([list(link) for link in links], created_at=1.0)  # type: ignore[misc]
    assert _internals(stores[0]) == _internals(stores[1])
    before = _internals(stores[0])
    for bad in ([("n0", "n2", Relation.BEFORE)], [("n0", "n2", Relation.BEFORE, 1.0), ("n2", "n0")]):
        with pytest.raises(ValueError):
            stores[0].put_links(bad, created_at=2.0)  # type: ignore[arg-type]
    assert _internals(stores[0]) == before


def test_the_one_step_append_tells_two_edges_alike_from_different_ones() -> None:
    """`_append_new` takes new edges in one step, and refuses a batch where two edges share
    source, target and relation (however far apart their slots), leaving the store as it was."""
    store = DictGraphStore()
    for i in range(300):
        store.put_node(MemoryNode(id=f"n{i}", content="x", namespace="ns"))
    slot = store._slot
    far = [("n0", "n299", Relation.SIMILAR_TO), ("n299", "n0", Relation.SIMILAR_TO), ("n0", "n299", Relation.BEFORE),
           ("n1", "n298", Relation.SIMILAR_TO)]
    assert store._append_new([a for a, _, _ in far], [b for _, b, _ in far], [_CODES[r] for _, _, r in far],
                             [0.5] * 4, 2.0)
    assert store.edge_count() == 4 and slot["n0"] == 0
    before = _internals(store)
    twice = [("n5", "n297", Relation.BEFORE), ("n6", "n7", Relation.BEFORE), ("n5", "n297", Relation.BEFORE)]
    assert not store._append_new([a for a, _, _ in twice], [b for _, b, _ in twice],
                                 [_CODES[r] for _, _, r in twice], [0.5] * 3, 3.0)
    assert _internals(store) == before


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["put", "remove"]), st.sampled_from("abcdef"),
                          st.sampled_from([None, 5.0]), st.sampled_from([None, 7.0])), max_size=40))
def test_bounded_nodes_counts_the_nodes_that_can_stop_being_current(
        ops: list[tuple[str, str, float | None, float | None]]) -> None:
    """`DictGraphStore.bounded_nodes` (the read path's licence to admit without fetching nodes)
    is the number of stored nodes with an expiry or an end of validity, through inserts,
    replacements either way, removals and edges naming ids before their nodes exist."""
    g = DictGraphStore()
    g.put_edge(MemoryEdge(source="a", target="f", relation=Relation.BEFORE))  # "a" and "f" exist as ends first
    for op, node_id, expires_at, valid_to in ops:
        if op == "put":
            g.put_node(MemoryNode(id=node_id, content=node_id, namespace="u", expires_at=expires_at,
                                  valid_to=valid_to))
        else:
            g.remove_node(node_id)
        assert g.bounded_nodes == sum(n.expires_at is not None or n.valid_to is not None for n in g.nodes())
