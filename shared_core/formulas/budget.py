"""Token budgets: greedy packing by priority and truncation to a token count, as pure functions.

The context builder packs tiers in priority order (working memory, then recalled memories by
score, then summaries) with `pack_greedy`, then checks the exact token count of the rendered
text and drops from the tail until it fits, so the budget always holds exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

__all__ = ["pack_greedy", "truncate_to_tokens"]

T = TypeVar("T")


def pack_greedy(items: Sequence[T], cost: Callable[[T], int], budget: int, *,
                overhead: int = 0) -> tuple[list[T], list[T]]:
    """Take items in order while ``overhead + sum(cost(taken)) <= budget``; skip what does not fit.

    A later, cheaper item may still fit after a costly one was skipped (first-fit by priority).
    Returns ``(taken, skipped)``.

    >>> pack_greedy(["aaaa", "bb", "cccccc", "d"], len, 8)
    (['aaaa', 'bb', 'd'], ['cccccc'])
    """
    taken: list[T] = []
    skipped: list[T] = []
    used = overhead
    for item in items:
        c = cost(item)
        if used + c <= budget:
            taken.append(item)
            used += c
        else:
            skipped.append(item)
    return taken, skipped


def truncate_to_tokens(text: str, max_tokens: int, count: Callable[[str], int], *,
                       marker: str = " …[truncated]") -> str:
    """The longest prefix of ``text`` (cut at a word boundary when possible) that, with
    ``marker`` appended, counts at most ``max_tokens``; "" if not even the marker fits.

    Binary search over the character length: O(log n) token counts.

    >>> truncate_to_tokens("one two three four", 3, lambda s: len(s.split()), marker=" [cut]")
    'one two [cut]'
    """
    if count(text) <= max_tokens:
        return text
    if count(marker.strip()) > max_tokens:
        return ""
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if count(text[:mid].rstrip() + marker) <= max_tokens:
            lo = mid
        else:
            hi = mid - 1
    prefix = text[:lo]
    space = prefix.rfind(" ")
    if space > lo // 2 and lo < len(text) and not text[lo].isspace():
        prefix = prefix[:space]
    prefix = prefix.rstrip()
    return (prefix + marker) if prefix else marker.strip()
