"""Holding turns in working memory: the write filter's side of the write and read paths.

`held_back` decides, outside the lock, which specs of a write the write filter keeps out of the
graph (`shared_core.engine.lifecycle.write_filter`); `hold_turns` puts them in the
`WorkingBuffer` after the rest of the write succeeded, under the lock, and returns every result in
input order; `merge_held` merges the held turns into `build_context`'s working-memory tier.
`shared_core.engine.lifecycle.manager.Lifecycle` calls them with its buffer and state.

>>> from shared_core.engine.lifecycle.write_filter import HeuristicWriteFilter
>>> from shared_core.engine.writes import build_spec
>>> from shared_core import AtlasConfig
>>> specs = [build_spec(AtlasConfig(), 4, text, namespace="u", embedding=[1, 0, 0, 0])
...          for text in ("ok thanks!", "My passport number is X1234567")]
>>> sorted(held_back(HeuristicWriteFilter(), specs, threshold=0.3))
[0]
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from ...values.model import MemoryNode, ScoredMemory

if TYPE_CHECKING:
    from ...store.contract import Partition
    from ..state import EngineState
    from ..writes import MemorySpec
    from .write_filter import WorkingBuffer, WriteFilter

__all__ = ["held_back", "hold_turns", "merge_held"]

logger = logging.getLogger("shared_core")
Predicate = Callable[[MemoryNode], bool]


def held_back(flt: WriteFilter | None, specs: Sequence[MemorySpec], *, threshold: float
              ) -> dict[int, tuple[MemorySpec, float]]:
    """The specs the write filter keeps out of the graph, by position, with their score.

    Runs outside the lock. Writes that state intent (``keep``, an explicit importance, a pin,
    links) and non-memory kinds always pass; a filter that fails is logged and the turn is
    written. A turn is held when its score is below ``threshold`` (``write_threshold``).
    """
    if flt is None:
        return {}
    held = {}
    for i, spec in enumerate(specs):
        if spec.keep or spec.pinned or spec.links or spec.kind != "memory":
            continue
        try:
            score = float(flt.score(spec.content))
        except Exception:
            logger.exception("write filter %r failed; writing the turn", flt)
            continue
        if score < threshold:
            held[i] = (spec, score)
    return held


def hold_turns(state: EngineState, buffer: WorkingBuffer, held: dict[int, tuple[MemorySpec, float]],
               kept: list[MemoryNode], now: float) -> list[MemoryNode]:
    """Put held turns in working memory (under the lock, after the write succeeded) and return
    every result in input order; a held turn comes back with ``kind="working"``.

    A held turn takes the turn of the next memory of the same write stored in its namespace
    (else the namespace's next turn), so that a transcript sorted by (turn, held first) keeps
    the order in which the turns were given."""
    if not held:
        return kept
    nodes: dict[int, MemoryNode] = {}
    stored = iter(kept)
    following: dict[int, int] = {}  # held position -> the turn of the next stored memory of its namespace
    waiting: list[int] = []
    for i in range(len(held) + len(kept)):
        if i in held:
            waiting.append(i)
            continue
        node = next(stored, None)
        if node is None:
            break
        for j in [j for j in waiting if held[j][0].namespace == node.namespace]:
            following[j] = node.turn
            waiting.remove(j)
    for i, (spec, score) in held.items():
        part = state.backend.partition(spec.namespace)
        turn = following.get(i, (part.turn if part is not None else 0) + 1)
        node = MemoryNode(id=f"wm-{uuid.uuid4().hex}", content=spec.content, namespace=spec.namespace,
                          session_id=spec.session_id, weight=spec.importance, importance=spec.importance,
                          timestamp=spec.timestamp if spec.timestamp is not None else now, created_at=now,
                          last_accessed_at=now, turn=turn, accessed_turn=turn, metadata=spec.metadata,
                          valid_from=now, kind="working")
        buffer.add(node)
        nodes[i] = node
        state.events.emit("hold", namespace=spec.namespace, node_id=node.id, at=now,
                          reason=f"importance {score:.2f} < {state.config.write_threshold}: "
                                 "working memory only", session_id=spec.session_id)
    out: list[MemoryNode] = []
    rest = iter(kept)
    for i in range(len(held) + len(kept)):
        nxt = nodes.get(i) or next(rest, None)
        if nxt is not None:
            out.append(nxt)
    return out


def merge_held(buffer: WorkingBuffer, working: list[ScoredMemory], part: Partition, session: str | None,
               wm: int, predicate: Predicate | None, *, exclude: Collection[str] = ()) -> list[ScoredMemory]:
    """The working-memory tier of `build_context`: the session's latest memories (summaries
    left out) merged with the turns the write filter held back, newest ``wm`` first."""
    working = [w for w in working if w.node.kind != "summary"]
    held = [n for n in buffer.latest(part.namespace, session, wm)
            if n.id not in exclude and (predicate is None or predicate(n))]
    if not held:
        return working
    merged = working + [ScoredMemory(n, 1.0, {"working": 1.0}, ("working",)) for n in held]
    merged.sort(key=lambda m: (m.node.created_at, m.node.turn, m.node.kind != "working"), reverse=True)
    return merged[:wm]
