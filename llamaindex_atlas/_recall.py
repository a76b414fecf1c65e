"""The atlas's `Context` shaped for LlamaIndex: beside the turns shown as messages, or made smaller.

`ElasticMemoryAtlas.build_context` decides what is recalled and reinforces it; these helpers only
repack the memories it chose with the core's own packer (`shared_core.context.build_context_block`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared_core import Context, ElasticMemoryAtlas, MemoryNode, ScoredMemory
from shared_core.context import build_context_block
from shared_core.filters import compile_filters

__all__ = ["context_beside", "repack", "shrink"]

#: Tokens a context header (and its separator) may take: once the turns shown as messages leave
#: the atlas's context, the recalled memories need a header of their own.
_HEADER_ROOM = 12
_UNLIMITED = 1 << 30


def _is_working(hit: ScoredMemory) -> bool:
    return hit.paths == ("working",)


def repack(atlas: ElasticMemoryAtlas, hits: Sequence[ScoredMemory], *, budget: int, style: str) -> Context:
    """Render ``hits`` (the memories of a context) in ``budget`` tokens, keeping their tiers:
    working memory first, then recalled memories by score, then summaries."""
    if budget <= 0:
        return Context("", 0, budget=max(budget, 0), style=style)
    working = [h for h in hits if _is_working(h)]
    summaries = [h for h in hits if not _is_working(h) and h.node.kind == "summary"]
    recalled = sorted((h for h in hits if not _is_working(h) and h.node.kind != "summary"), key=lambda h: -h.score)
    return build_context_block(working, recalled, summaries, style=style, budget=budget,
                               count=atlas.count_tokens, marker=atlas.config.truncation_marker)


def shrink(atlas: ElasticMemoryAtlas, ctx: Context, *, tokens_to_cut: int) -> Context:
    """``ctx`` repacked at least ``tokens_to_cut`` tokens smaller: its lowest-scored memories go first."""
    return repack(atlas, ctx.memories, budget=ctx.tokens - max(tokens_to_cut, 0), style=ctx.style)


def context_beside(atlas: ElasticMemoryAtlas, query: str, *, namespace: str, session_id: str,
                   tail: Sequence[MemoryNode], shown: set[str], budget: int, style: str, reinforce: bool,
                   filters: Mapping[str, Any] | None, cross_session: bool | None) -> Context:
    """What the atlas recalls for ``query`` beside the turns the caller shows as chat messages.

    ``tail`` is the session's memories from the first turn shown to the last; ``shown`` the ids
    of those shown as messages. The atlas gets the tail as working memory, so it neither recalls
    those memories again nor reinforces them, and a budget that pays for rendering the shown ones
    plus ``budget`` for the rest; the result is the rest alone, within ``budget``. Every memory the
    atlas reinforced is in it, except in the rare case a header costs more than ``_HEADER_ROOM``.
    """
    if budget <= 0:
        return Context("", 0, budget=0, style=style)
    keep = compile_filters(filters)
    working = [ScoredMemory(n, 1.0, {"working": 1.0}, ("working",))
               for n in tail if n.id in shown and (keep is None or keep(n))]
    spent_on_tail = repack(atlas, working, budget=_UNLIMITED, style=style).tokens if working else 0
    ctx = atlas.build_context(query, namespace=namespace, session_id=session_id,
                              token_budget=budget + max(0, spent_on_tail - _HEADER_ROOM), style=style,
                              working_memory=len(tail), reinforce=reinforce, filters=filters,
                              cross_session=cross_session)
    rest = [h for h in ctx.memories if h.node.id not in shown]
    if len(rest) == len(ctx.memories) and ctx.tokens <= budget:
        return ctx
    return repack(atlas, rest, budget=budget, style=style)
