"""The atlas's `Context` shaped for LlamaIndex: beside the turns shown as messages, or made smaller.

`ElasticMemoryAtlas.build_context` decides what is recalled and reinforces it; these helpers only
repack the memories it chose with the core's own packer (`shared_core.engine.context.build_context_block`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from shared_core import Context, ElasticMemoryAtlas, ScoredMemory
from shared_core.engine.context import build_context_block

__all__ = ["context_beside", "repack", "shrink"]

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
                   shown: set[str], budget: int, style: str, reinforce: bool,
                   filters: Mapping[str, Any] | None, cross_session: bool | None) -> Context:
    """What the atlas recalls for ``query`` beside the turns the caller shows as chat messages.

    ``shown`` are the ids of the turns shown as messages: the atlas leaves them out
    (``exclude_ids``), so it neither recalls them again nor reinforces them, and packs the rest
    in ``budget``.
    """
    if budget <= 0:
        return Context("", 0, budget=0, style=style)
    return atlas.build_context(query, namespace=namespace, session_id=session_id, token_budget=budget, style=style,
                               working_memory=0, reinforce=reinforce, filters=filters,
                               cross_session=cross_session, exclude_ids=shown)
