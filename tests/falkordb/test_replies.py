"""The wire format (`shared_core.store.falkordb.replies`): the statements read in FalkorDB's
verbose format give exactly the values (and types) the compact format gives, the parameters
are written as the `falkordb` client writes them, and a refused statement leaves the backend's
connections usable."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from shared_core import ElasticMemoryAtlas, ManualClock
from shared_core.store.falkordb import FalkorPartition
from shared_core.store.falkordb import cypher as q
from shared_core.store.falkordb.indexes import query_literal
from shared_core.store.falkordb.replies import (
    SCALAR_COLUMNS,
    SCALAR_PREFIXES,
    Literal,
    cypher_literal,
    params_header,
    rows,
    scalars,
)
from shared_core.values.errors import BackendError

TOPICS = ("coffee and milk", "trains to Lyon", "the dentist on Friday")


def _typed(found: list[list[Any]]) -> list[list[tuple[str, Any]]]:
    return [[(type(v).__name__, v) for v in row] for row in found]


def _read(query: str, found: list[list[Any]]) -> list[list[Any]]:
    """Verbose rows as their reader takes them: a double left as text (`Scalars.texts`, a node's)
    read with `float`, as `graph.node_from_row` reads it (None stays None)."""
    kinds = scalars(query)
    assert kinds is not None
    for row in found:
        for i in kinds.texts:
            assert row[i] is None or isinstance(row[i], str), (query, i, row[i])
            row[i] = None if row[i] is None else float(row[i])
    return found


def test_verbose_statements_read_as_the_compact_format(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                       clock: ManualClock) -> None:
    atlas = shared_atlas()
    made = []
    for i in range(14):  # every kind of field: pinned, metadata, expiring, no session, superseded, edges
        clock.advance(61.37)
        made.append(atlas.add_memory(f"note {i} about {TOPICS[i % 3]} \"quoted\" \\ back", namespace="r",
                                     session_id=None if i % 4 == 0 else f"s{i % 2}",
                                     metadata={"k": i, "t": "x"} if i % 2 else None, pinned=i == 3,
                                     importance=0.5 + i / 10, ttl=3600.5 if i % 5 == 0 else None))
    atlas.link(made[0].id, made[5].id, relation="caused_by")
    atlas.add_memory("lol", namespace="r", session_id="s1")  # a backchannel: the step-over columns are not null
    atlas.update_memory(made[2].id, "note 2 about coffee, corrected")  # a superseded version
    atlas.retrieve("coffee", namespace="r", top_k=3)  # reinforced: weights and access times move
    part = atlas.backend.partition("r")
    assert isinstance(part, FalkorPartition)
    conn, key = part.graph_key.conn, part.graph_key.key
    ids = [n.id for n in part.graph.nodes()]
    assert len(ids) >= 15
    params: dict[str, dict[str, Any]] = {
        q.GET_NODE: {"id": ids[3]}, q.NODES: {"skip": 0, "limit": 100}, q.NODES_AMONG: {"ids": [*ids, "missing"]},
        q.EDGES: {"id": made[0].id}, q.EDGES_AMONG: {"ids": ids},
        q.WALK_HOP: {"ids": ids, "vector": query_literal(atlas.embedder.embed(["coffee"])[0])},
        q.WALK_HOP_NODES: {"ids": ids}, q.WALK_HOP_NODES_TYPED: {"ids": ids, "types": ["BEFORE", "CAUSED_BY"]},
        q.WALK_HOP_THROUGH: {"ids": ids}, q.WALK_HOP_NODES_THROUGH: {"ids": ids},
        q.WALK_HOP_NODES_TYPED_THROUGH: {"ids": ids, "types": ["BEFORE", "CAUSED_BY"]},
        q.VECTOR_AMONG: {"ids": [*ids, "missing"], "query": query_literal(atlas.embedder.embed(["coffee"])[0])},
    }
    # a statement added to SCALAR_COLUMNS is checked here too (the weight's writes: below)
    assert set(params) | set(_RESCALES) == set(SCALAR_COLUMNS)
    typed = {q.walk_hop_nodes_of("CAUSED_BY"): {"ids": ids},  # one of each of SCALAR_PREFIXES
             q.walk_hop_nodes_of("BEFORE", through=True): {"ids": ids}}
    assert [head for head, _ in SCALAR_PREFIXES] == [q.WALK_HOP_NODES_OF, q.WALK_HOP_NODES_THROUGH_OF]
    assert any(row[7] is not None for row in conn.run(key, q.WALK_HOP_THROUGH, {"ids": ids}))  # a step over read
    for query, values in (params | typed).items():
        header = params_header(values)
        compact = rows(conn.command("GRAPH.RO_QUERY", key, header + query, "--compact"))
        kinds = scalars(query)
        assert kinds is not None
        verbose = _read(query, kinds.rows(conn.command("GRAPH.RO_QUERY", key, header + query)))
        assert compact, query
        assert _typed(verbose) == _typed(compact), query
        assert _typed(_read(query, conn.run(key, query, values))) == _typed(compact), query  # what the backend reads
    held = {type(v) for row in rows(conn.command("GRAPH.RO_QUERY", key, params_header(params[q.NODES]) + q.NODES,
                                                 "--compact")) for v in row}
    assert {bool, float, int, str, type(None)} <= held  # the graph has every kind the columns hold


_RESCALES = {q.rescale(unit, model, reinforce=r): False for unit in q.DECAY_UNITS for model in q.WEIGHT_MODELS
             for r in (True, False)} | {q.batch_rescale(unit, model, reinforce=r, vectors=v): True
                                         for unit in q.DECAY_UNITS for model in q.WEIGHT_MODELS
                                         for r in (True, False) for v in (True, False)}


def test_the_weight_writes_read_verbose_as_the_compact_format(shared_atlas: Callable[..., ElasticMemoryAtlas],
                                                              clock: ManualClock) -> None:
    """`cypher.rescale` and `cypher.batch_rescale` (a recall's reinforcement, a fade) are writes:
    each is run on two copies of one graph (`GRAPH.COPY`), compact on one and verbose on the
    other, which must give the same values and types (the new weights' digits included)."""
    atlas = shared_atlas(weight_model="rich")
    for i in range(6):
        clock.advance(93.7)
        atlas.add_memory(f"note {i} about {TOPICS[i % 3]}", namespace="w", session_id=None if i % 2 else "s",
                         metadata={"k": i} if i % 2 else None, pinned=i == 3, ttl=3600.5 if i == 4 else None)
    atlas.retrieve("coffee", namespace="w", top_k=3)
    part = atlas.backend.partition("w")
    assert isinstance(part, FalkorPartition)
    conn, key = part.graph_key.conn, part.graph_key.key
    ids = [n.id for n in part.graph.nodes()]
    clock.advance(1234.5)
    common = {"now": clock.now(), "factor": 1.3, "ln2": 0.6931471805599453, "half_life": 86400.0, "floor": 0.05,
              "cap": 3.0, "recency_gain": 0.5}
    for n, (query, batch) in enumerate(_RESCALES.items()):
        values = common | ({"ids": [*ids, "missing"]} if batch else {"id": ids[n % len(ids)]})
        header = params_header(values)
        copies = [f"{key}:compact{n}", f"{key}:verbose{n}"]
        for copy in copies:
            conn.command("GRAPH.COPY", key, copy)
        try:
            compact = rows(conn.command("GRAPH.QUERY", copies[0], header + query, "--compact"))
            kinds = scalars(query)
            assert kinds is not None
            verbose = _read(query, kinds.rows(conn.command("GRAPH.QUERY", copies[1], header + query)))
        finally:
            for copy in copies:
                conn.command("DEL", copy)
        assert compact and len(compact) == (len(ids) if batch else 1), query
        assert _typed(verbose) == _typed(compact), query
        assert {type(v) for row in compact for v in row} >= {float, int, str}


def test_a_refused_statement_leaves_the_connection_usable(shared_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    atlas = shared_atlas()
    node = atlas.add_memory("a memory", namespace="r")
    part = atlas.backend.partition("r")
    assert isinstance(part, FalkorPartition)
    graph = part.graph_key
    for _ in range(3):
        with pytest.raises(BackendError, match="refused a query"):
            graph.read_many([(q.NODES_AMONG, {"ids": [node.id]}), ("RETURN nosuchfunction(1)", {}),
                             (q.GET_NODE, {"id": node.id})])
        with pytest.raises(BackendError, match="refused a query"):
            graph.read("RETURN nosuchfunction(1)")
        assert graph.read(q.GET_NODE, {"id": node.id})[0][0] == node.id  # the next reply is its own
    assert [h.node.id for h in atlas.retrieve("a memory", namespace="r")] == [node.id]


def test_parameters_are_written_as_the_falkordb_client_writes_them() -> None:
    from falkordb.helpers import stringify_param_value

    values: list[Any] = [
        "", "plain", 'a "quote"', "back\\slash", "\\\"", "ünïcödé ✓", "new\nline", None, True, False, 0, -3, 2**40,
        0.1, 1e300, float("inf"), [], ["a", "b"], ["a", 'b"'], ["a\\"], ["x", 1, None], [["a"], ["b", 2]], ("t", "u"),
        [True, 1.5], {"k": "v", "n": [1, "x"]}, [{"k": None}], [Literal("[1]")], b"bytes",
    ]
    for value in values:
        assert cypher_literal(value) == stringify_param_value(value), value
    assert params_header({"ids": ["a"], "v": Literal("[0.5]"), "s": "q\""}) == 'CYPHER ids=["a"] v=[0.5] s="q\\"" '
    assert params_header({}) == ""


def test_the_weight_statements_read_verbose_are_made_for_every_decay_unit_and_weight_model() -> None:
    """`SCALAR_COLUMNS` lists `rescale`'s statements for `cypher.DECAY_UNITS` x `cypher.WEIGHT_MODELS`:
    those must be every value `AtlasConfig` accepts, or a config's statements fall back to the
    compact format unnoticed."""
    from typing import get_args, get_type_hints

    from shared_core.values.config import AtlasConfig

    hints = get_type_hints(AtlasConfig)
    assert set(q.DECAY_UNITS) == set(get_args(hints["decay_unit"]))
    assert set(q.WEIGHT_MODELS) == set(get_args(hints["weight_model"]))
