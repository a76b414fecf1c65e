"""Context windows: the short turns next to a recalled memory come along into the context.

In a chat a fact is often split over consecutive short messages, and an answer follows the
question it answers ("what did you do this weekend?" -> "swimming with the kids"): the turn
recall finds is worth more with its neighbours beside it. `with_neighbours` puts, right after
each recalled memory (in the packing's priority order), the turns just before and after it in
its session that are at most ``max_tokens`` long, and returns which memory each one came with;
`shared_core.engine.context.build_context_block` packs a companion only once the memory it came
with is packed, so the budget stays exact and a companion never comes alone. On by default
(``AtlasConfig.context_neighbours``, 12 tokens: a short message comes along, a long turn does not).

The neighbours are the ends of the memories' ``before`` edges (the session's order, written by
`shared_core.engine.writes`), reached by one hop of the graph walk over that relation only
(`Partition.neighbour_nodes`: `Partition.expand`'s walk, which a server store answers with the
nodes in one request), so every backend serves them through the storage contract. The walk
steps over a backchannel ("ok", "lol", "👍": flagged on write, `shared_core.formulas.chatter.contentless`;
`WalkSpec.step_over`) to the turn beyond it, so a backchannel between a question and its answer
does not cut the window, and is not shown (its tokens go to another memory); two backchannels in
a row end the step, as in recall's walk. Each neighbour is admitted as recall admits a memory
(current, or valid at ``as_of``; the caller's filter; not excluded) and is never a summary.

>>> from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, ManualClock
>>> atlas = ElasticMemoryAtlas(config=AtlasConfig(context_neighbours=12, graph_hops=0),
...                            embedder=HashingEmbedder(dim=256), clock=ManualClock(1_700_000_000.0))
>>> for text in ["Ann: What did you do this weekend?", "Bob: Went swimming with the kids",
...              "Ann: Nice!", "Bob: Work was busy, the quarterly report is due on Friday"]:
...     _ = atlas.add_memory(text, namespace="chat", session_id="s1")
>>> ctx = atlas.build_context("swimming", namespace="chat", token_budget=60, reinforce=False)
>>> print(ctx.text)
Memory timeline (oldest first):
[Tue 14 Nov 2023]
Ann: What did you do this weekend?
Bob: Went swimming with the kids
>>> [m.paths for m in ctx.memories]
[('neighbour',), ('vector', 'keyword')]
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Collection, Sequence

from ..formulas.filters import Predicate
from ..store.contract import Partition, WalkSpec
from ..values.model import MemoryNode, Relation, ScoredMemory
from ..values.relations import RELATIONS

__all__ = ["admission", "with_neighbours"]


def admission(part: Partition, *, now: float, as_of: float | None, predicate: Predicate | None,
              excluded: Collection[str] = ()) -> Callable[[MemoryNode], bool]:
    """Whether a neighbour may be shown, as recall admits a memory: valid at ``as_of`` (or
    current and not retired or superseded), passing ``predicate``, not ``excluded``, not a summary."""
    inactive = part.inactive

    def admit(node: MemoryNode) -> bool:
        if node.kind == "summary" or node.id in excluded:
            return False
        if as_of is not None:
            if not node.is_valid_at(as_of):
                return False
        elif node.id in inactive or not node.is_current(now):
            return False
        return predicate is None or predicate(node)

    return admit


def _session_walk() -> WalkSpec:
    """One hop over ``before`` edges only (either direction), every neighbour reached, stepping
    over backchannels."""
    factors: list[float | None] = [1.0 if r is Relation.BEFORE else None for r in RELATIONS]
    return WalkSpec(factors=factors, hops=1, decay=1.0, fanout=2, min_activation=0.0, beam=None, step_over=True)


def with_neighbours(part: Partition, hits: Sequence[ScoredMemory], *, max_tokens: int,
                    count: Callable[[str], int], admit: Callable[[MemoryNode], bool]
                    ) -> tuple[list[ScoredMemory], dict[str, str]]:
    """``hits`` (in priority order) with each one's short session neighbours right after it, and
    neighbour id -> the id of the hit it comes with.

    A neighbour is a turn joined to a hit by a ``before`` edge, or through a backchannel ("ok",
    "lol") so joined (`WalkSpec.step_over`), not itself a hit, admitted by ``admit`` and at most
    ``max_tokens`` long (``count`` of its content). It comes with the hit of its session nearest
    to it in turn order (the better hit on a tie), after it in time order, and carries that hit's
    score and other-session flag, path ``("neighbour",)``.
    ``max_tokens`` of 0 or no hits: ``hits`` unchanged and no companions.
    """
    if max_tokens <= 0 or not hits:
        return list(hits), {}
    by_session: dict[str | None, list[tuple[int, int]]] = {}  # session -> sorted (turn, hit position)
    for pos, h in enumerate(hits):
        by_session.setdefault(h.node.session_id, []).append((h.node.turn, pos))
    for ordered in by_session.values():
        ordered.sort()
    after: dict[int, list[MemoryNode]] = {}
    ids = [h.node.id for h in hits]
    for node in part.neighbour_nodes(ids, _session_walk()):
        line = by_session.get(node.session_id)
        if not line or not admit(node) or count(node.content) > max_tokens:
            continue
        turn = node.turn
        i = bisect.bisect_left(line, (turn, -1))
        near = [line[j] for j in (i - 1, i) if 0 <= j < len(line)]
        pos = min(near, key=lambda tp: (abs(tp[0] - turn), tp[1]))[1]
        after.setdefault(pos, []).append(node)
    out: list[ScoredMemory] = []
    companions: dict[str, str] = {}
    for pos, h in enumerate(hits):
        out.append(h)
        for node in sorted(after.get(pos, ()), key=lambda n: (n.timestamp, n.turn, n.id)):
            out.append(ScoredMemory(node, h.score, {"neighbour": 1.0}, ("neighbour",), h.other_session))
            companions[node.id] = h.node.id
    return out, companions
