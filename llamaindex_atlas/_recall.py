"""Recall for a query, rendered within a token budget: the text both memory classes hand to the LLM."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from shared_core import Context, ElasticMemoryAtlas, ScoredMemory
from shared_core.context import build_context_block

__all__ = ["recall_context", "shrink_context"]


def _pack(atlas: ElasticMemoryAtlas, hits: list[ScoredMemory], *, budget: int, style: str) -> Context:
    recalled = [h for h in hits if h.node.kind != "summary"]
    summaries = [h for h in hits if h.node.kind == "summary"]
    return build_context_block((), recalled, summaries, style=style, budget=budget,
                               count=atlas.count_tokens, marker=atlas.config.truncation_marker)


def recall_context(atlas: ElasticMemoryAtlas, query: str, *, namespace: str, session_id: str | None,
                   budget: int, style: str, top_k: int, cross_session: bool | None,
                   filters: Mapping[str, Any] | None, reinforce: bool,
                   exclude: Collection[str] = ()) -> Context:
    """The ``top_k`` best memories for ``query``, minus ``exclude``, rendered in ``budget`` tokens.

    `ElasticMemoryAtlas.build_context` cannot leave given memories out, and the chat memory must
    not repeat in the recall block the turns it already shows as messages: so this asks `retrieve`
    for ``top_k + len(exclude)`` hits and packs those it keeps with the core's own packer. As in
    `retrieve`, the hits are reinforced unless ``reinforce`` is False.
    """
    if budget <= 0 or not query.strip():
        return Context("", 0, budget=max(budget, 0), style=style)
    hits = atlas.retrieve(query, namespace=namespace, session_id=session_id, top_k=top_k + len(exclude),
                          filters=filters, cross_session=cross_session, reinforce=reinforce)
    kept = [h for h in hits if h.node.id not in exclude][:top_k]
    return _pack(atlas, kept, budget=budget, style=style)


def shrink_context(atlas: ElasticMemoryAtlas, ctx: Context, *, tokens_to_cut: int) -> Context:
    """``ctx`` repacked at least ``tokens_to_cut`` tokens smaller, dropping its lowest-scored memories."""
    budget = ctx.tokens - max(tokens_to_cut, 0)
    if budget <= 0:
        return Context("", 0, budget=0, style=ctx.style)
    by_score = sorted(ctx.memories, key=lambda h: -h.score)
    return _pack(atlas, by_score, budget=budget, style=ctx.style)
