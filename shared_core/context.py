"""Rendering recalled memories as a context block within a token budget.

Three styles:

- ``timeline``: every memory on its own dated line, oldest first;
- ``bullet``: the current conversation, then recalled memories as numbered points by score,
  then summaries;
- ``narrative``: one paragraph of dated sentences, extractive (an LLM can rewrite it, see
  `ElasticMemoryAtlas.build_context`).

`build_context_block` packs tiers by priority, counts the exact tokens of the rendered text
(headers and separators included) and never returns more tokens than the budget.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from .budget import truncate_to_tokens
from .errors import InvalidInputError
from .model import Context, ScoredMemory

__all__ = ["STYLES", "build_context_block", "render"]

STYLES = ("timeline", "bullet", "narrative")
WORKING, RECALLED, SUMMARY = 0, 1, 2
_HEADERS = {
    ("bullet", WORKING): "Current conversation:",
    ("bullet", RECALLED): "Relevant memories (most relevant first):",
    ("bullet", SUMMARY): "Summaries:",
    ("timeline", None): "Memory timeline (oldest first):",
    ("narrative", None): "What I remember:",
}


@dataclass(frozen=True, slots=True)
class _Item:
    tier: int
    hit: ScoredMemory
    text: str  # the memory's text, possibly truncated


def _date(ts: float) -> str:
    return datetime.fromtimestamp(ts, tz=UTC).strftime("%Y-%m-%d %H:%M")


def _long_date(ts: float) -> str:
    d = datetime.fromtimestamp(ts, tz=UTC)
    return f"{d.day} {d.strftime('%B %Y')}"


def _label(hit: ScoredMemory) -> str:
    return f" (from session {hit.node.session_id})" if hit.other_session else ""


def _line(item: _Item, style: str, index: int) -> str:
    text = " ".join(item.text.split())
    if style == "timeline":
        tag = " [summary]" if item.tier == SUMMARY else ""
        return f"- [{_date(item.hit.node.timestamp)}]{tag} {text}{_label(item.hit)}"
    if style == "bullet":
        if item.tier == RECALLED:
            return f"{index}. [{_date(item.hit.node.timestamp)}] {text}{_label(item.hit)}"
        return f"- {text}"
    sentence = text.rstrip()
    if sentence and sentence[-1] not in ".!?…":
        sentence += "."
    return f"On {_long_date(item.hit.node.timestamp)}, {sentence}{_label(item.hit)}"


def _by_time(items: Sequence[_Item]) -> list[_Item]:
    return sorted(items, key=lambda it: (it.hit.node.timestamp, it.hit.node.turn, it.hit.node.id))


def _narrative(items: Sequence[_Item]) -> str:
    """Dated sentences, one date phrase per run of memories from the same day."""
    parts: list[str] = []
    day = ""
    for it in items:
        line = _line(it, "narrative", 0)
        this_day = _long_date(it.hit.node.timestamp)
        prefix = f"On {this_day}, "
        if this_day == day and line.startswith(prefix):
            line = "Also, " + line[len(prefix):]
        day = this_day
        parts.append(line)
    return " ".join(parts)


def render(items: Sequence[_Item], style: str) -> str:
    """Render packed items; items arrive in priority order."""
    if not items:
        return ""
    if style == "timeline":
        return "\n".join([_HEADERS[("timeline", None)], *(_line(it, style, 0) for it in _by_time(items))])
    if style == "narrative":
        return _HEADERS[("narrative", None)] + " " + _narrative(_by_time(items))
    lines: list[str] = []
    for tier in (WORKING, RECALLED, SUMMARY):
        tier_items = [it for it in items if it.tier == tier]
        if tier == WORKING:
            tier_items.sort(key=lambda it: (it.hit.node.created_at, it.hit.node.turn))
        if tier_items:
            if lines:
                lines.append("")
            lines.append(_HEADERS[("bullet", tier)])
            lines.extend(_line(it, style, i + 1) for i, it in enumerate(tier_items))
    return "\n".join(lines)


def build_context_block(working: Sequence[ScoredMemory], recalled: Sequence[ScoredMemory],
                        summaries: Sequence[ScoredMemory], *, style: str, budget: int,
                        count: Callable[[str], int], marker: str = " …[truncated]") -> Context:
    """Pack the three tiers into ``budget`` tokens and render them in ``style``.

    Each item costs the tokens of its rendered line plus one separator; each section header
    costs its own tokens. Packing is greedy by priority; then the exact count of the whole text
    is taken, and items are dropped from the lowest priority until it is within the budget.
    The top recalled memory, if too long to fit, is cut with ``marker`` instead of dropped.
    """
    if style not in STYLES:
        raise InvalidInputError(f"style must be one of {', '.join(STYLES)}; got {style!r}")
    seen: set[str] = set()
    items: list[_Item] = []
    for tier, hits in ((WORKING, working), (RECALLED, recalled), (SUMMARY, summaries)):
        for hit in hits:
            if hit.node.id not in seen:
                seen.add(hit.node.id)
                items.append(_Item(tier, hit, hit.node.content))
    if budget <= 0 or not items:
        return Context("", 0, (), tuple(it.hit for it in items), budget, style)

    headers = {tier: count(_HEADERS.get((style, tier), _HEADERS.get((style, None), ""))) + 2
               for tier in (WORKING, RECALLED, SUMMARY)}
    single_header = style != "bullet"
    overhead = headers[RECALLED] if single_header else 0
    used = overhead
    opened: set[int] = set()
    taken: list[_Item] = []
    dropped: list[_Item] = []
    for item in items:
        cost = count(_line(item, style, len(taken) + 1)) + 1
        extra = 0 if single_header or item.tier in opened else headers[item.tier]
        if used + cost + extra <= budget:
            taken.append(item)
            used += cost + extra
            opened.add(item.tier)
            continue
        first_recalled = item.tier == RECALLED and not any(t.tier == RECALLED for t in taken)
        room = budget - used - extra - (count(_line(_Item(item.tier, item.hit, ""), style, 1)) + 1)
        if first_recalled and room > 4:
            cut = truncate_to_tokens(item.text, room, count, marker=marker)
            if cut:
                taken.append(_Item(item.tier, item.hit, cut))
                used += count(_line(taken[-1], style, len(taken))) + 1 + extra
                opened.add(item.tier)
                continue
        dropped.append(item)

    text = render(taken, style)
    tokens = count(text)
    while tokens > budget and taken:  # the estimate was off by a merge across a boundary
        dropped.insert(0, taken.pop())
        text = render(taken, style)
        tokens = count(text)
    order = {id(it): i for i, it in enumerate(taken)}
    if style in ("timeline", "narrative"):
        shown = _by_time(taken)
    else:
        shown = sorted(taken, key=lambda it: (it.tier, order[id(it)]))
    return Context(text, tokens, tuple(it.hit for it in shown), tuple(it.hit for it in dropped),
                   budget, style)

