"""A recall's reinforcement (`FalkorPartition.reinforce_many`) without waiting for the write.

The write (`cypher.rescale_behind`: each memory's weight decayed to now, times the factor, capped;
one more access; one atomic statement) is sent behind whatever the call still has to read, its
reply read before this process's next command (`Connection.write_behind`). The nodes the call
returns are the ones the write would have returned, obtained one of two ways:

1. **computed here** when this call has read, exactly, what the write computes from (the weight
   and importance as an integer and a fraction of ``2**40``, the access count, turns and last
   access: the walk's hops read the ranking's nodes with them, `cypher.NODES_AHEAD`, and
   `build_context`'s context windows those it lacks, `INPUTS`), and the vectors a `retrieve`
   returns came with the vector search (its first hits' raw vectors): the write's expressions
   (`cypher.rescale`) are run here in the same order on the same doubles
   (`reinforced_weight_of`), and the weight written with FalkorDB's 15 significant digits, as
   its reply gives it. No request at all;
2. otherwise **read just ahead of the write** on the same connection (`cypher.rescale_preview`:
   the write's expressions, without the write), with the memories' raw vectors, which
   `retrieve` returns: one round trip, the write's reply not waited for.

Either way another client's change to one of those memories between that read and the write is
in the stored weight (the write is atomic) and not in the node returned. Where every write's
reply is waited for (a cluster, ``?replicas=N``), or an id repeats, it is the one statement
`cypher.batch_rescale` returning the nodes, as before.

>>> exact(2**40, 0.5), exact(0, 0.0), exact(5, 0.1) is None  # (whole + fraction) / 2**40, when lossless
(1.0000000000004547, 0.0, True)
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from ...values.config import AtlasConfig
from ...values.model import MemoryNode, evolve
from . import cypher as q
from .graph import FalkorGraphStore, node_from_row
from .indexes import FalkorVectorIndex


class _Key(Protocol):
    def write(self, query: str, params: Mapping[str, Any] | None = None) -> list[list[Any]]: ...

    def write_behind(self, query: str, params: Mapping[str, Any],
                     reads: Sequence[tuple[str, Mapping[str, Any]]] = ()) -> list[list[list[Any]]] | None: ...


class FalkorPartition(Protocol):
    """What a reinforcement uses of `shared_core.store.falkordb.partition.FalkorPartition`."""

    namespace: str
    graph: FalkorGraphStore
    vectors: FalkorVectorIndex
    reinforcement_inputs: dict[str, Read]

    @property
    def graph_key(self) -> _Key: ...

__all__ = ["INPUTS", "Inputs", "Read", "exact", "reinforce_many", "reinforced_weight_of"]

#: a row read for a memory's reinforcement: (a `cypher.NODES_AHEAD` row, the namespace's turn) or
#: (an `INPUTS` row, None)
Read = tuple[Sequence[Any], int | None]

LN2 = math.log(2.0)
_SCALE = 1099511627776.0  # 2**40
_MIN_WHOLE = 1024  # a whole part of at least 11 bits leaves a fraction of at most 42, which 15 digits hold


_PLAIN = [f for f in q.NODE_FIELDS if f not in q.TIME_FIELDS]
# columns of `cypher.NODE_COLUMNS` (each time field as two)
_COUNT, _ACCESSED, _PINNED = (_PLAIN.index(f) for f in ("access_count", "accessed_turn", "pinned"))
_LAST = len(_PLAIN) + 2 * q.TIME_FIELDS.index("last_accessed_at")


def _lossless(field: str, scale: str = "") -> str:
    scaled = f"n.{field} * {scale}" if scale else f"n.{field}"
    return f"toInteger(floor({scaled})), {scaled} - floor({scaled})"


#: What a reinforcement computes from, read without loss (`exact`): id, weight, importance (each
#: as the whole part and the fraction of itself times 2**40), access count, accessed turn, last
#: access (whole seconds and the fraction), pinned, the namespace's turn
INPUTS = ("UNWIND $ids AS id MATCH (n:Memory {id: id}) OPTIONAL MATCH (c:Atlas) "
          f"RETURN n.id, {_lossless('weight', str(_SCALE))}, {_lossless('importance', str(_SCALE))}, "
          f"n.access_count, n.accessed_turn, {_lossless('last_accessed_at')}, n.pinned, coalesce(c.turn, 0)")


def exact(whole: Any, fraction: Any, scale: float = _SCALE) -> float | None:
    """``(whole + fraction) / scale`` when the fraction (written with 15 significant digits) is
    the stored one exactly: a whole part of at least `_MIN_WHOLE`, or nothing but zero."""
    if whole is None or fraction is None:
        return None
    big, small = int(whole), float(fraction)
    if (big < _MIN_WHOLE and not (big == 0 and small == 0.0)) or big >= 2**52:
        return None
    return (big + small) / scale


class Inputs:
    """One memory's `INPUTS` row: what the write reads."""

    __slots__ = ("access_count", "accessed_turn", "importance", "last_accessed_at", "pinned", "turn", "weight")

    def __init__(self, weight: float, importance: float, access_count: int, accessed_turn: int,
                 last_accessed_at: float, pinned: bool, turn: int) -> None:
        self.weight, self.importance, self.access_count = weight, importance, access_count
        self.accessed_turn, self.last_accessed_at = accessed_turn, last_accessed_at
        self.pinned, self.turn = pinned, turn

    @classmethod
    def of_node_row(cls, row: Sequence[Any], turn: int) -> Inputs | None:
        """A `cypher.NODES_AHEAD` row, with the namespace's ``turn`` as this call read it; None
        unless its doubles came back exactly."""
        weight, importance = exact(row[-5], row[-4]), exact(row[-3], row[-2])
        last = exact(row[_LAST], row[_LAST + 1], 1.0)
        count, accessed = row[_COUNT], row[_ACCESSED]
        if weight is None or importance is None or last is None or count is None or accessed is None:
            return None
        return cls(weight, importance, int(count), int(accessed), last, bool(row[_PINNED]), turn)

    @classmethod
    def of_row(cls, row: Sequence[Any]) -> Inputs | None:
        """An `INPUTS` row; None unless its doubles came back exactly."""
        _, w_hi, w_lo, i_hi, i_lo, count, accessed, t_hi, t_lo, pinned, turn = row
        weight, importance = exact(w_hi, w_lo), exact(i_hi, i_lo)
        last = exact(t_hi, t_lo, 1.0)
        if weight is None or importance is None or last is None or count is None or accessed is None:
            return None
        return cls(weight, importance, int(count), int(accessed), last, bool(pinned), int(turn))

    @classmethod
    def of(cls, read: Read) -> Inputs | None:
        """What a call keeps of a memory for its reinforcement (`FalkorPartition.reinforcement_inputs`):
        a `cypher.NODES_AHEAD` row and the turn, or an `INPUTS` row and None; made into `Inputs`
        only for the memories reinforced."""
        row, turn = read
        return cls.of_row(row) if turn is None else cls.of_node_row(row, turn)


def reinforced_weight_of(inputs: Inputs, *, now: float, config: AtlasConfig) -> float:
    """The weight `cypher.rescale` (reinforcing) sets, computed as its Cypher computes it: the
    same operations in the same order, on the same doubles (`cypher._current_weight`).

    >>> i = Inputs(1.0, 1.0, 0, 0, 0.0, False, 0)
    >>> reinforced_weight_of(i, now=3600.0, config=AtlasConfig(half_life=3600.0))
    0.6
    """
    floor, cap, half_life = config.weight_floor, config.weight_cap, config.half_life
    if inputs.pinned:
        elapsed = 0.0
    elif config.decay_unit == "turns":
        elapsed = float(inputs.turn - inputs.accessed_turn)
    else:
        elapsed = now - inputs.last_accessed_at
    if config.weight_model == "rich":
        r = math.exp(-LN2 * elapsed / half_life) if elapsed > 0 else 1.0
        accesses = inputs.access_count if inputs.access_count > 0 else 0
        importance = inputs.importance
        value = importance + math.log(1 + accesses) + 0.5 * r + 0.0 - importance * (1.0 - r)
        floored = floor if floor >= value else value
        current = cap if cap <= floored else floored
    elif elapsed <= 0:
        current = floor if floor >= inputs.weight else inputs.weight
    else:
        decayed = inputs.weight * math.exp(-LN2 * elapsed / half_life)
        current = floor if floor >= decayed else decayed
    scaled = current * config.reinforce_factor
    return cap if cap <= scaled else scaled


def _computed(part: FalkorPartition, node_ids: Sequence[str], now: float, config: AtlasConfig
              ) -> list[MemoryNode] | None:
    """Each node as the write would return it, computed here (see the module docstring), or None
    when one was not read exactly in this call."""
    known = part.reinforcement_inputs
    out = []
    for node_id in node_ids:
        read, node = known.get(node_id), part.graph.cache.nodes.get(node_id)
        inputs = None if read is None else Inputs.of(read)
        if inputs is None or node is None:
            return None
        weight = float(format(reinforced_weight_of(inputs, now=now, config=config), ".15g"))
        out.append(evolve(node, weight=weight, access_count=inputs.access_count + 1, last_accessed_at=now,
                          accessed_turn=inputs.turn))
    return out


def reinforce_many(part: FalkorPartition, node_ids: Sequence[str], *, now: float, config: AtlasConfig
                   ) -> list[MemoryNode | None]:
    """`Partition.reinforce_many` on the server (see the module docstring)."""
    if not node_ids:
        return []
    params = {"ids": list(node_ids), "now": float(now), "factor": float(config.reinforce_factor), "ln2": LN2,
              "half_life": float(config.half_life), "floor": float(config.weight_floor),
              "cap": float(config.weight_cap), "recency_gain": 0.5}
    cache = part.graph.cache
    unique = len(set(node_ids)) == len(node_ids)
    computed = _computed(part, node_ids, float(now), config) if unique else None
    for node_id in node_ids:
        cache.nodes.pop(node_id, None)
    cache.turn = None
    behind = q.rescale_behind(config.decay_unit, config.weight_model)
    if computed is not None and part.graph_key.write_behind(behind, params) is not None:
        for node in computed:
            cache.nodes[node.id] = node
        return list(computed)
    read = part.graph_key.write_behind(behind, params, [(q.rescale_preview(config.decay_unit, config.weight_model),
                                                         params)]) if unique else None
    rows = read[0] if read is not None else \
        part.graph_key.write(q.batch_rescale(config.decay_unit, config.weight_model, reinforce=True), params)
    for row in rows:
        node = node_from_row(row[:-1], part.namespace)
        cache.nodes[node.id] = node
        part.vectors.remember(node.id, row[-1])
    return [cache.nodes.get(i) for i in node_ids]
