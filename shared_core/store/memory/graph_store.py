"""The in-process graph stores: the default `DictGraphStore` (and `NetworkXGraphStore`, from `networkx_store`).

A graph store holds the memories and typed edges of *one* namespace; the backend gives each
namespace its own store, so no walk can leave a namespace: there is no edge to follow.

`DictGraphStore` is the default because memory per memory and the cost of reading a node's edges
(the inner loop of spreading activation) matter at 100k memories. It keeps no Python object per
edge: edges are rows of typed arrays, and each node's lists of rows share two int arrays. Readers
that only need (other end, relation, strength) call `GraphStore.links`, which builds no
`MemoryEdge`; `edges` builds them. A networkx ``MultiDiGraph`` keeps, per node, an attribute
dict plus successor and predecessor dicts, and per edge nested dicts on each side; it stays
available for users who want its algorithms on the store.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import repeat
from operator import itemgetter
from typing import Any

import numpy as np

from ...values.model import NO_METADATA, AnyRelation, MemoryEdge, MemoryNode, Relation, edge_of
from ...values.relations import RELATION_CODES, RELATIONS
from ..base import GraphStoreBase
from ..contract import GraphStore, Link
from ._int_lists import CAPACITIES, IntLists
from ._ints import number
from .networkx_store import NetworkXGraphStore

__all__ = ["DictGraphStore", "GraphStore", "Link", "NetworkXGraphStore"]

_RELATIONS = RELATIONS  # the process's relation table (append-only: custom relations join it)
_COLUMNS = tuple(itemgetter(i) for i in range(4))  # a link's source, target, relation, strength
_CODES = RELATION_CODES  # by member and by value: an Enum member hashes as its name


def _bounded(node: MemoryNode) -> bool:
    """Whether a node may stop being current (`MemoryNode.is_current`): it has an expiry or an
    end of validity (`DictGraphStore.bounded_nodes` counts these)."""
    return node.expires_at is not None or node.valid_to is not None


class DictGraphStore(GraphStoreBase):
    """Nodes in a dict, edges as rows of typed arrays; at most one edge per (source, target, relation).

    Each id has a slot number (``_slot``); per slot, the node and two lists of edge rows
    (`IntLists`), its out-edges and its in-edges, each in insertion order (a self-loop is an
    out-edge only). An edge row is four columns, 17 bytes: its ends' slots XOR-ed together
    (``_ends``: from one end, the other is ``ends ^ own slot``; which list it is in says which
    end is the source), relation code, strength and creation time, the last as a number in a
    table of distinct times (``_when`` into ``_times``: the edges of one write share one time);
    its metadata, when it has any, sits in a dict by row. Freed slots and rows are reused.
    `MemoryEdge` objects are built only when `edges` is called; `links` and `neighbors` read the
    rows directly. Hand-written
    rather than a graph library because those keep one or more Python objects per edge
    (networkx: four dicts), which is the cost this store exists to avoid.

    Replacing an edge keeps its place, as networkx does.

    >>> from shared_core.values.model import MemoryEdge, MemoryNode, Relation
    >>> g = DictGraphStore()
    >>> for i in "ab":
    ...     g.put_node(MemoryNode(id=i, content=i, namespace="u"))
    >>> g.put_edge(MemoryEdge(source="a", target="b", relation=Relation.BEFORE))
    >>> g.neighbors("b"), g.links("a"), g.edge_count()
    ([('a', 1.0)], [('b', <Relation.BEFORE: 'before'>, 1.0)], 1)
    >>> [e.relation.value for e in g.remove_node("a")], g.edges("b")
    (['before'], [])
    """

    #: `put_links` takes at least this many edges in one step (`_append_new`); fewer go edge by
    #: edge: its numpy calls cost more than they save on a single memory's few links, and pay
    #: off on a batch's thousands. Both ways leave identical stores.
    bulk_links = 64

    __slots__ = ("_bounded", "_chatter", "_edges", "_ends", "_free_rows", "_free_slots", "_ids", "_in", "_meta",
                 "_node", "_nodes", "_out", "_rel", "_slot", "_strength", "_times", "_used", "_when")

    def __init__(self) -> None:
        # a slot per id that is a node or an end of an edge
        self._slot: dict[str, int] = {}  # in first-insertion order, which `nodes` follows
        self._ids: list[str | None] = []  # slot -> id
        self._node: list[MemoryNode | None] = []  # slot -> node (None: an id only edges name)
        self._out = IntLists()  # slot -> rows of its out-edges
        self._in = IntLists()  # slot -> rows of its in-edges
        self._free_slots: array[int] = array("i")
        self._used = 0  # slots handed out (the lists above have room for a few more)
        self._nodes = 0
        self._bounded = 0  # nodes with an expiry or an end of validity (`bounded_nodes`)
        self._chatter: set[str] = set()  # the nodes flagged backchannels (`mark_chatter`)
        # an edge per row
        self._ends: array[int] = array("i")  # source slot ^ target slot
        self._rel: array[int] = array("b")  # index in _RELATIONS; -1: a free row
        self._strength: array[float] = array("d")
        self._when: array[int] = array("i")  # row -> its creation time's place in _times
        self._times: array[float] = array("d")  # distinct creation times, in first-use order
        self._meta: dict[int, Mapping[str, Any]] = {}  # rows with metadata only
        self._free_rows: array[int] = array("i")
        self._edges = 0

    # -- nodes --------------------------------------------------------------------------------
    def put_node(self, node: MemoryNode) -> None:
        s = self._slot.get(node.id)
        if s is None:
            s = self._new_slot(node.id)
        elif self._node[s] is None:  # an id that edges named first: `nodes` lists it from now
            del self._slot[node.id]
            self._slot[node.id] = s
        old = self._node[s]
        if old is None:
            self._nodes += 1
        elif _bounded(old):
            self._bounded -= 1
        if _bounded(node):
            self._bounded += 1
        self._node[s] = node

    def get_node(self, node_id: str) -> MemoryNode | None:
        s = self._slot.get(node_id)
        return None if s is None else self._node[s]

    def has(self, node_id: str) -> bool:
        s = self._slot.get(node_id)
        return s is not None and self._node[s] is not None

    def remove_node(self, node_id: str) -> list[MemoryEdge]:
        s = self._slot.get(node_id)
        if s is None or self._node[s] is None:
            return []
        removed = self._edges_of(s)
        ends = self._ends
        for own, others in ((self._out, self._in), (self._in, self._out)):
            rows = own.get(s)
            for e in rows:
                other = ends[e] ^ s
                if other != s:
                    others.remove(other, e)
                    self._release(other)
                self._free_row(e)
            self._edges -= len(rows)
            own.clear(s)
        node = self._node[s]
        if node is not None and _bounded(node):
            self._bounded -= 1
        self._node[s] = None
        self._nodes -= 1
        self._chatter.discard(node_id)
        self._release(s)
        return removed

    def mark_chatter(self, flags: Iterable[tuple[str, bool]]) -> None:
        chatter, has = self._chatter, self.has
        for node_id, flag in flags:
            if flag and has(node_id):
                chatter.add(node_id)
            else:
                chatter.discard(node_id)

    def is_chatter(self, node_id: str) -> bool:
        return node_id in self._chatter

    def nodes(self) -> Iterator[MemoryNode]:
        node = self._node  # a snapshot in insertion order: callers may remove while iterating
        return iter([n for s in self._slot.values() if (n := node[s]) is not None])

    def node_count(self) -> int:
        return self._nodes

    @property
    def bounded_nodes(self) -> int:
        """How many nodes may stop being current (`MemoryNode.is_current`): those with an
        ``expires_at`` or a ``valid_to``. While there are none, every node is current at any
        time, which lets the read path admit a memory without fetching its node."""
        return self._bounded

    # -- edges --------------------------------------------------------------------------------
    def put_edge(self, edge: MemoryEdge) -> None:
        code = _CODES.get(edge.relation)
        if code is None:
            code = _CODES[Relation.parse(edge.relation)]  # raises InvalidRelationError
        self._put(((edge.source, edge.target, code, float(edge.strength), float(edge.created_at), edge.metadata),))

    def put_links(self, links: Iterable[tuple[str, str, AnyRelation, float]], *, created_at: float) -> None:
        """`put_edge` for many (source, target, relation, strength) edges without metadata, all
        created at ``created_at``: the write path's automatic links, with no `MemoryEdge` to build
        for each (building one takes longer than storing the edge). Every link is checked first,
        so a bad one changes nothing."""
        created = float(created_at)
        rows = list(links)
        if not rows:
            return
        columns: Sequence[Sequence[Any]]  # one C pass a column (faster than zip(*rows))
        if set(map(type, rows)) == {tuple} and set(map(len, rows)) == {4}:
            columns = [list(map(column, rows)) for column in _COLUMNS]
        else:
            columns = list(zip(*rows, strict=True))
        sources, targets, relations, strengths = columns
        try:
            codes = list(map(_CODES.__getitem__, relations))  # (map: no Python step per edge)
        except KeyError:
            codes = [_CODES[Relation.parse(relation)] for relation in relations]  # raises InvalidRelationError
        floats = list(map(float, strengths))
        if len(rows) < self.bulk_links or not self._append_new(sources, targets, codes, floats, created):
            self._put(zip(sources, targets, codes, floats, repeat(created), repeat(NO_METADATA), strict=False))

    def _append_new(self, sources: Sequence[str], targets: Sequence[str], codes: Sequence[int],
                    strengths: Sequence[float], created: float) -> bool:
        """`_put` of edges without metadata created at ``created`` when none can be in the store
        yet (one there needs an out-edge at its source and an in-edge at its target) and none
        repeats another: the row columns grow in one step each, and only the adjacency lists take
        the edges one by one. False, with nothing changed, when the edges do not qualify (an end
        with no slot, time 0.0, an edge that may exist): `_put` does the work, with the same result.
        The write path's edges qualify (each has a new memory at one end)."""
        slots = self._slot
        try:
            s_list, t_list = list(map(slots.__getitem__, sources)), list(map(slots.__getitem__, targets))
        except KeyError:
            return False
        if created == 0.0:  # `_put` keeps each 0.0 apart (0.0 and -0.0)
            return False
        s, t, code = (np.array(x, dtype=np.int64) for x in (s_list, t_list, codes))
        out_len = np.frombuffer(self._out.lengths, dtype=np.int32)
        in_len = np.frombuffer(self._in.lengths, dtype=np.int32)
        maybe = bool(((out_len[s] > 0) & ((in_len[t] > 0) | (s == t))).any())
        del out_len, in_len  # views: the arrays cannot grow while they are held
        if maybe:
            return False
        if len(s) > 1:
            key = np.stack([s, t, code])[:, np.lexsort((code, t, s))]
            if (key[:, 1:] == key[:, :-1]).all(axis=0).any():  # two edges alike
                return False
        times = self._times
        if not times or times[-1] != created:
            times.append(created)
        at = len(times) - 1
        ends, rel, strength, when, free = self._ends, self._rel, self._strength, self._when, self._free_rows
        n = len(s_list)
        reused = [free.pop() for _ in range(min(len(free), n))]  # freed rows first, as `_put` takes them
        for j, e in enumerate(reused):
            ends[e], rel[e], strength[e], when[e] = s_list[j] ^ t_list[j], codes[j], strengths[j], at
        k, first = len(reused), len(ends)
        ends.frombytes((s[k:] ^ t[k:]).astype(np.int32).tobytes())
        rel.frombytes(code[k:].astype(np.int8).tobytes())
        strength.fromlist(list(strengths[k:]))
        when.frombytes(np.full(n - k, at, dtype=np.int32).tobytes())
        rows = np.concatenate([np.array(reused, dtype=np.int64), np.arange(first, first + n - k, dtype=np.int64)])
        self._out.append_each(s, rows)  # arrays: IntLists.append_each takes them without a conversion
        loop = s == t
        if loop.any():  # a self-loop is an out-edge only
            t, rows = t[~loop], rows[~loop]
        self._in.append_each(t, rows)
        self._edges += n
        if len(times) > 2 * self._edges + 1024:
            self._compact_times()
        return True

    def _put(self, rows: Iterable[tuple[str, str, int, float, float, Mapping[str, Any]]]) -> None:
        """Insert or replace (source, target, relation code, strength, created_at, metadata) rows.

        The write path's inner loop (about four edges per memory), so lookups are hoisted and
        the lists' appends inlined where the block has room."""
        slots, out, inn, capacities = self._slot, self._out, self._in, CAPACITIES
        out_len, out_start, out_cls, out_data = out.lengths, out.starts, out.classes, out.data
        in_len, in_start, in_cls, in_data = inn.lengths, inn.starts, inn.classes, inn.data
        ends, rel, strengths, when, free, meta = (self._ends, self._rel, self._strength, self._when,
                                                  self._free_rows, self._meta)
        times = self._times
        last, at = (times[-1], len(times) - 1) if times else (None, -1)
        added = 0
        for source, target, code, strength, created, metadata in rows:
            if created != last or created == 0.0:  # a new time (0.0 and -0.0 are equal but kept apart)
                times.append(created)
                last, at = created, len(times) - 1
            s = slots.get(source)
            if s is None:
                s = self._new_slot(source)
            t = slots.get(target)
            if t is None:
                t = self._new_slot(target)
            n = out_len[s]
            e = self._find(s, t, code) if n and (t == s or in_len[t]) else None
            if e is not None:  # replace in place
                strengths[e], when[e] = strength, at
                meta.pop(e, None)
            else:
                if free:
                    e = free.pop()
                    ends[e], rel[e], strengths[e], when[e] = s ^ t, code, strength, at
                else:
                    e = len(ends)
                    ends.append(s ^ t)
                    rel.append(code)
                    strengths.append(strength)
                    when.append(at)
                if n and n < capacities[out_cls[s]]:
                    out_data[out_start[s] + n] = e
                    out_len[s] = n + 1
                else:
                    out.append(s, e)
                if t != s:
                    n = in_len[t]
                    if n and n < capacities[in_cls[t]]:
                        in_data[in_start[t] + n] = e
                        in_len[t] = n + 1
                    else:
                        inn.append(t, e)
                added += 1
            if metadata is not NO_METADATA and metadata:
                meta[e] = metadata
        self._edges += added
        if len(times) > 2 * self._edges + 1024:
            self._compact_times()

    def _compact_times(self) -> None:
        """Drop the times no edge has any more (a table that outgrew twice the edges)."""
        rel, when = self._rel, self._when
        used = sorted({when[e] for e in range(len(rel)) if rel[e] >= 0})
        place = {old: new for new, old in enumerate(used)}
        self._times = array("d", [self._times[i] for i in used])
        for e in range(len(rel)):
            when[e] = place[when[e]] if rel[e] >= 0 else 0

    def remove_edge(self, source: str, target: str, relation: AnyRelation) -> bool:
        s, t, code = self._slot.get(source), self._slot.get(target), _CODES.get(relation)
        if s is None or t is None or code is None:
            return False
        e = self._find(s, t, code)
        if e is None:
            return False
        self._out.remove(s, e)
        if t != s:
            self._in.remove(t, e)
            self._release(t)
        self._release(s)
        self._free_row(e)
        self._edges -= 1
        return True

    def edges(self, node_id: str) -> list[MemoryEdge]:
        """Out-edges first, then in-edges, each in insertion order (as networkx lists them)."""
        s = self._slot.get(node_id)
        return [] if s is None else self._edges_of(s)

    def links(self, node_id: str) -> list[Link]:
        s = self._slot.get(node_id)
        if s is None:
            return []
        ids, ends, rel, strength, relations = self._ids, self._ends, self._rel, self._strength, _RELATIONS
        return [(ids[ends[e] ^ s], relations[rel[e]], strength[e]) for e in self._rows(s)]  # type: ignore[misc]

    def neighbors(self, node_id: str) -> list[tuple[str, float]]:
        s = self._slot.get(node_id)
        if s is None:
            return []
        ids, ends, strength = self._ids, self._ends, self._strength
        return [(ids[ends[e] ^ s], strength[e]) for e in self._rows(s)]  # type: ignore[misc]

    def weighted_links(self, node_id: str, factors: Sequence[float | None]) -> list[tuple[str, float]]:
        """``(other end, min(1, strength) * factors[i])`` for each edge of `links`, in its order,
        where ``i`` is the relation's place in `Relation` and the factor is not None; self-loops
        left out. The graph walk's form of `links` (`shared_core.engine.recall`), with no tuple per
        edge it skips."""
        s = self._slot.get(node_id)
        if s is None:
            return []
        ids, ends, rel, strength = self._ids, self._ends, self._rel, self._strength
        return [(ids[ends[e] ^ s], (w if (w := strength[e]) < 1.0 else 1.0) * f)  # type: ignore[misc]
                for e in self._rows(s) if (f := factors[rel[e]]) is not None and ends[e]]  # ends 0: a self-loop

    def edge_count(self) -> int:
        return self._edges

    def degree(self, node_id: str) -> int:
        s = self._slot.get(node_id)
        return 0 if s is None else self._out.lengths[s] + self._in.lengths[s]

    # -- internals ----------------------------------------------------------------------------
    def _new_slot(self, node_id: str) -> int:
        if self._free_slots:
            s = number(self._free_slots.pop())
        else:
            s = number(self._used)  # shared int objects (see shared_core.store.memory._ints)
            if s == len(self._ids):  # room for an eighth more slots at once: one append per slot is slow
                more = max(16, s // 8)
                self._ids.extend([None] * more)
                self._node.extend([None] * more)
                self._out.add_slots(more)
                self._in.add_slots(more)
            self._used = s + 1
        self._ids[s] = node_id
        self._slot[node_id] = s
        return s

    def _release(self, s: int) -> None:
        """Free a slot that holds neither a node nor an edge."""
        if self._node[s] is None and not self._out.lengths[s] and not self._in.lengths[s]:
            del self._slot[self._ids[s]]  # type: ignore[arg-type]
            self._ids[s] = None
            self._free_slots.append(s)

    def _rows(self, s: int) -> array[int]:
        """Slot ``s``'s edge rows, out-edges first."""
        out, inn = self._out, self._in
        a = out.starts[s]
        rows = out.data[a:a + out.lengths[s]]
        n = inn.lengths[s]
        if n:
            a = inn.starts[s]
            rows += inn.data[a:a + n]
        return rows

    def _find(self, s: int, t: int, code: int) -> int | None:
        """The row of the edge s -> t of ``code``: searched in the shorter of s's out-list and
        t's in-list (a new memory's lists are short, whatever its neighbours' are)."""
        out, inn = self._out, self._in
        lists, slot = (inn, t) if t != s and inn.lengths[t] < out.lengths[s] else (out, s)
        a = lists.starts[slot]
        ends, rel, st = self._ends, self._rel, s ^ t
        for e in lists.data[a:a + lists.lengths[slot]]:  # the other end is right when ends == s ^ t
            if ends[e] == st and rel[e] == code:
                return e
        return None

    def _free_row(self, e: int) -> None:
        self._rel[e] = -1
        self._meta.pop(e, None)
        self._free_rows.append(e)

    def _edges_of(self, s: int) -> list[MemoryEdge]:
        ids, ends, rel, strength, meta = self._ids, self._ends, self._rel, self._strength, self._meta
        when, times = self._when, self._times
        own = ids[s]
        return [edge_of(own, ids[ends[e] ^ s], _RELATIONS[rel[e]], strength[e], times[when[e]],  # type: ignore[arg-type]
                        meta.get(e, NO_METADATA)) for e in self._out.get(s)] + \
               [edge_of(ids[ends[e] ^ s], own, _RELATIONS[rel[e]], strength[e], times[when[e]],  # type: ignore[arg-type]
                        meta.get(e, NO_METADATA)) for e in self._in.get(s)]

