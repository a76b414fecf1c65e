"""Rendering recalled memories as a context block within a token budget.

Three styles:

- ``timeline``: the memories in time order under one dated header per day (``[Mon 8 May 2023]``),
  one memory per line, with ``…`` where the conversation skips memories in between; every line
  is dated by the header it sits under, which costs a few tokens per day instead of ten per line;
  a message that directly follows one of the same speaker (a chat's run of short messages) is
  shown without the speaker's label again, as a chat transcript does;
- ``bullet``: the current conversation, then recalled memories as numbered points by score, each
  dated (``1. [8 May 2023] ...``), then summaries;
- ``narrative``: one paragraph of sentences in time order, each day opened by "On <date>,";
  extractive (an LLM can rewrite it, see `ElasticMemoryAtlas.build_context`).

`build_context_block` packs tiers by priority (working memory, recalled memories by score,
summaries). The marginal cost of each memory is computed from the layout (its line, a day
header when it opens a day, a gap marker when it is not next to a memory already taken), so a
hit whose neighbouring turns are already in costs only its own line. The exact token count of
the rendered text is then taken, and memories are dropped from the lowest priority until it is
within the budget, so ``tokens <= budget`` always holds.

Speed: each memory is laid out once per call; with the default counter its line's count comes
from a cache (`TiktokenCounter`), and a memory whose words alone cannot fit is not counted at all.
"""

from __future__ import annotations

import bisect
import functools
import math
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import numpy as np

from ..formulas.budget import truncate_to_tokens
from ..formulas.diversity import mmr_order
from ..formulas.questions import analyze_query
from ..formulas.subqueries import labelled, speaker_of
from ..store.contract import GraphStore, VectorIndex
from ..text.tokens import TiktokenCounter
from ..values.config import AtlasConfig
from ..values.errors import InvalidInputError
from ..values.model import Context, ScoredMemory

__all__ = ["STYLES", "build_context_block", "context_breadth", "diversify", "render", "summaries_beside_sources"]

STYLES = ("timeline", "bullet", "narrative")
WORKING, RECALLED, SUMMARY = 0, 1, 2
GAP = "…"
_HEADERS = {
    ("bullet", WORKING): "Current conversation:",
    ("bullet", RECALLED): "Relevant memories (most relevant first):",
    ("bullet", SUMMARY): "Summaries:",
    ("timeline", None): "Memory timeline (oldest first):",
    ("narrative", None): "What I remember:",
}


class _Item:
    """A memory as laid out in one style: its tier, its text (possibly truncated), the rendered
    body and what the layout compares (time key, day, session, turn), each computed once."""

    __slots__ = ("body", "day", "hit", "label", "plain", "session", "speaker", "text", "tier", "turn", "when")

    def __init__(self, tier: int, hit: ScoredMemory, text: str, style: str) -> None:
        node = hit.node
        self.tier, self.hit, self.text = tier, hit, text
        self.body = _body(tier, hit, text, style)
        self.when = (node.timestamp, node.turn, node.id)
        self.session, self.turn = node.session_id, node.turn
        self.day = "" if style == "bullet" else _day(node.timestamp)  # bullets date each line instead
        # a timeline line may follow one of the same speaker without the label: "plain", which
        # saves "label" tokens (counted when first needed)
        self.speaker: str | None = None
        self.plain, self.label = self.body, -1
        if style == "timeline" and tier != SUMMARY and (who := speaker_of(text, node.metadata)) is not None:
            head, colon, rest = self.body.partition(":")
            if colon and rest.strip() and head.strip().casefold() == who.casefold():
                self.speaker, self.plain = who.casefold(), rest.strip()


@functools.lru_cache(maxsize=4096)
def _day(ts: float) -> str:
    d = datetime.fromtimestamp(ts, tz=UTC)
    return f"{d:%a} {d.day} {d:%b %Y}"


@functools.lru_cache(maxsize=4096)
def _short_day(ts: float) -> str:
    """The date on every bullet line: no weekday, two tokens fewer per memory."""
    d = datetime.fromtimestamp(ts, tz=UTC)
    return f"{d.day} {d:%b %Y}"


def _label(hit: ScoredMemory) -> str:
    return f" (from session {hit.node.session_id})" if hit.other_session else ""


@functools.lru_cache(maxsize=8192)
def _squeeze(text: str) -> str:
    """``text`` with each run of whitespace made one space, and none at either end. Memories
    are rendered on every query: the same string object comes back (``text`` itself when it
    needs no change), its hash already known to the counter's cache."""
    squeezed = " ".join(text.split())
    return text if squeezed == text else squeezed


def _body(tier: int, hit: ScoredMemory, text: str, style: str) -> str:
    """A memory's rendered line. A turn whose speaker is only in its metadata is shown with the
    speaker's label (`shared_core.formulas.subqueries.labelled`), as a labelled turn is:
    ``"Kate: went hiking"``; the label is part of the line the packer counts."""
    text = "[summary] " + _squeeze(text) if tier == SUMMARY else _squeeze(labelled(text, hit.node.metadata))
    if style != "narrative":
        return text + _label(hit)
    end = text[-1] if text and text[-1] in ".!?…" else "."  # the label goes inside the sentence
    return text.rstrip(".!?…") + _label(hit) + end


def _words(body: str) -> int:
    """The words of a squeezed line: under cl100k_base (`TiktokenCounter`) each starts a piece
    of the pre-tokeniser, so the line counts at least that many tokens, and a memory whose
    layout plus its words exceeds the room left is skipped without counting it. Other counters
    promise no such thing, and every line is counted with them.

    >>> _words("Ana: How was the trip?"), _words("")
    (5, 0)
    """
    return body.count(" ") + 1 if body else 0


def _adjacent(a: _Item, b: _Item) -> bool:
    """Whether ``b`` directly follows ``a`` in its session (no memory skipped in between)."""
    return a.session == b.session and b.turn - a.turn == 1


def _continues(a: _Item | None, b: _Item | None) -> bool:
    """Whether ``b`` is shown as ``a``'s speaker going on: the same speaker, directly after
    ``a`` on the same day (timeline lines only have a speaker)."""
    return (a is not None and b is not None and a.speaker is not None and a.speaker == b.speaker
            and a.day == b.day and _adjacent(a, b))


_WHEN = operator.attrgetter("when")


def _by_time(items: Sequence[_Item]) -> list[_Item]:
    return sorted(items, key=_WHEN)


def _day_runs(items: Sequence[_Item], style: str, opener: str) -> list[str]:
    """The style's header, then the memories in time order: ``opener`` (formatted with the day)
    before each new day, and a gap marker between memories of one day that were not adjacent."""
    parts = [_HEADERS[(style, None)]]
    previous: _Item | None = None
    for it in _by_time(items):
        if previous is None or it.day != previous.day:
            parts.append(opener.format(day=it.day))
        elif not _adjacent(previous, it):
            parts.append(GAP)
        parts.append(it.plain if _continues(previous, it) else it.body)
        previous = it
    return parts


def _timeline(items: Sequence[_Item]) -> str:
    return "\n".join(_day_runs(items, "timeline", "[{day}]"))


def _narrative(items: Sequence[_Item]) -> str:
    return " ".join(_day_runs(items, "narrative", "On {day},"))


def _bullets(items: Sequence[_Item]) -> str:
    lines: list[str] = []
    for tier in (WORKING, RECALLED, SUMMARY):
        tier_items = [it for it in items if it.tier == tier]
        if tier == WORKING:
            tier_items = _by_time(tier_items)
        if not tier_items:
            continue
        if lines:
            lines.append("")
        lines.append(_HEADERS[("bullet", tier)])
        for i, it in enumerate(tier_items, start=1):
            if tier == RECALLED:
                lines.append(f"{i}. [{_short_day(it.hit.node.timestamp)}] {it.body}")
            else:
                lines.append(f"- {it.body}")
    return "\n".join(lines)


def render(items: Sequence[_Item], style: str) -> str:
    """Render packed items (given in priority order, laid out for ``style``) in ``style``."""
    if not items:
        return ""
    if style == "timeline":
        return _timeline(items)
    if style == "narrative":
        return _narrative(items)
    return _bullets(items)


@dataclass(slots=True)
class _Packer:
    """Greedy packing with the marginal token cost of each memory in a given layout.

    The cost of a memory is ``layout(item) + count(item.body)``: its line's own tokens, plus one
    separator, plus what it adds around it (a tier header, a list number and date, a day header,
    a change in gap markers). ``layout`` needs no count of the memory's text, so a memory that
    cannot fit whatever its text counts can be skipped before counting it.
    """

    style: str
    count: Callable[[str], int]
    used: int = 0
    taken: list[_Item] = field(default_factory=list)
    days: dict[str, tuple[list[tuple[float, int, str]], list[_Item]]] = field(default_factory=dict)
    tiers: set[int] = field(default_factory=set)
    ranks: dict[int, int] = field(default_factory=dict)  # tier -> items taken
    gap: int = 0  # tokens of a gap marker and its separator
    memo: dict[str, int] = field(default_factory=dict)  # counts of headers, openers, list prefixes

    def __post_init__(self) -> None:
        if self.style != "bullet":
            self.used = self.tokens(_HEADERS[(self.style, None)])
        self.gap = self.tokens(GAP) + 1

    def tokens(self, text: str) -> int:
        """``count(text)``, counted once per call for the few texts every layout repeats."""
        n = self.memo.get(text)
        if n is None:
            n = self.memo[text] = self.count(text)
        return n

    def _label(self, item: _Item) -> int:
        """The tokens ``item`` saves when shown without its label."""
        if item.label < 0:
            item.label = self.count(item.body) - self.count(item.plain)
        return item.label

    def _gap_cost(self, item: _Item, keys: list[tuple[float, int, str]], day: list[_Item]) -> int:
        """Change in the tokens of a day's gap markers and labels when ``item`` joins it: a gap
        marker more or fewer, and the label ``item`` or the memory after it no longer shows."""
        i = bisect.bisect_left(keys, item.when)
        prev = day[i - 1] if i > 0 else None
        nxt = day[i] if i < len(day) else None
        before = int(prev is not None and nxt is not None and not _adjacent(prev, nxt))
        after = int(prev is not None and not _adjacent(prev, item)) + int(
            nxt is not None and not _adjacent(item, nxt))
        saved = (self._label(item) if _continues(prev, item) else 0) + (
            self._label(nxt) if nxt is not None and _continues(item, nxt) else 0)
        return (after - before) * self.gap - saved

    def layout(self, item: _Item) -> int:
        """The marginal cost of ``item`` in tokens, but for its body's own count."""
        if self.style == "bullet":
            header = 0 if item.tier in self.tiers else \
                self.tokens(_HEADERS[("bullet", item.tier)]) + (2 if self.tiers else 1)
            if item.tier == RECALLED:
                rank = self.ranks.get(item.tier, 0) + 1
                return header + 1 + self.tokens(f"{rank}. [{_short_day(item.hit.node.timestamp)}] ")
            return header + 2
        day = self.days.get(item.day)
        if day is None:
            opener = f"[{item.day}]" if self.style == "timeline" else f"On {item.day},"
            return 1 + self.tokens(opener) + 1
        return 1 + self._gap_cost(item, *day)

    def cost(self, item: _Item) -> int:
        return self.layout(item) + self.count(item.body)

    def add(self, item: _Item, cost: int) -> None:
        self.taken.append(item)
        self.used += cost
        self.tiers.add(item.tier)
        self.ranks[item.tier] = self.ranks.get(item.tier, 0) + 1
        if self.style == "bullet":
            return
        keys, day = self.days.setdefault(item.day, ([], []))
        i = bisect.bisect_right(keys, item.when)
        keys.insert(i, item.when)
        day.insert(i, item)


def build_context_block(working: Sequence[ScoredMemory], recalled: Sequence[ScoredMemory],
                        summaries: Sequence[ScoredMemory], *, style: str, budget: int,
                        count: Callable[[str], int], marker: str = " …[truncated]",
                        companions: Mapping[str, str] | None = None) -> Context:
    """Pack the three tiers into ``budget`` tokens and render them in ``style``.

    Items are taken greedily in priority order when their marginal cost fits; a cheaper item
    may still fit after a costly one was skipped. The top recalled memory, if too long to fit,
    is cut with ``marker`` instead of dropped. The rendered text is then counted exactly and
    trimmed from the lowest priority until it is within the budget.

    With ``count=TiktokenCounter().count`` (the atlas's default), a memory whose layout plus
    its number of words exceeds the room left is known not to fit and is not counted (see
    `_words`); any other ``count`` is called for every memory considered.

    ``companions`` (memory id -> the id it comes with, `shared_core.engine.neighbours`): such a
    memory is packed only if the one it comes with was packed before it.
    """
    if style not in STYLES:
        raise InvalidInputError(f"style must be one of {', '.join(STYLES)}; got {style!r}")
    seen: set[str] = set()
    items: list[_Item] = []
    for tier, hits in ((WORKING, working), (RECALLED, recalled), (SUMMARY, summaries)):
        for hit in hits:
            if hit.node.id not in seen:
                seen.add(hit.node.id)
                items.append(_Item(tier, hit, hit.node.content, style))
    if budget <= 0 or not items:
        return Context("", 0, (), tuple(it.hit for it in items), budget, style)

    packer = _Packer(style, count)
    words_floor = getattr(count, "__func__", None) is TiktokenCounter.count
    dropped: list[_Item] = []
    top_seen = False
    packed: set[str] = set()
    for item in items:
        lead = companions.get(item.hit.node.id) if companions else None
        if lead is not None and lead not in packed:  # a context window never comes alone
            dropped.append(item)
            continue
        if budget - packer.used < 3:  # not even a one-word line fits any more
            dropped.append(item)
            continue
        layout = packer.layout(item)
        if words_floor and layout + _words(item.body) > budget - packer.used:
            cost = budget + 1  # cannot fit, whatever its exact count: no need to count it
        else:
            cost = layout + count(item.body)
        if packer.used + cost <= budget:
            packer.add(item, cost)
            packed.add(item.hit.node.id)
        elif item.tier == RECALLED and not top_seen:
            empty = _Item(item.tier, item.hit, "", style)
            room = budget - packer.used - packer.cost(empty)
            cut = truncate_to_tokens(item.text, room, count, marker=marker) if room > 4 else ""
            if cut:
                short = _Item(item.tier, item.hit, cut, style)
                packer.add(short, packer.cost(short))
                packed.add(item.hit.node.id)
            else:
                dropped.append(item)
        else:
            dropped.append(item)
        top_seen = top_seen or item.tier == RECALLED

    taken = packer.taken
    text = render(taken, style)
    tokens = count(text)
    while tokens > budget and taken:  # an estimate was off (a merge across a boundary)
        dropped.insert(0, taken.pop())
        text = render(taken, style)
        tokens = count(text)
    if style == "bullet":
        order = {id(it): i for i, it in enumerate(taken)}
        shown = sorted(taken, key=lambda it: (it.tier, it.when if it.tier == WORKING else (order[id(it)],)))
    else:
        shown = _by_time(taken)
    return Context(text, tokens, tuple(it.hit for it in shown), tuple(it.hit for it in dropped),
                   budget, style)


def summaries_beside_sources(graph: GraphStore, shown: Sequence[ScoredMemory], *,
                             known: dict[str, list[tuple[str, bool]]] | None = None) -> set[str]:
    """The summaries among ``shown`` whose every source (``summarizes`` edge) is shown too, a
    backchannel aside (`GraphStore.is_chatter`: recall and the context windows never show one):
    they say nothing the context does not already hold, so the atlas renders the details without
    them. The summaries' sources are read in one call (`GraphStore.summarized`), only for those
    not in ``known`` (which keeps what was read, for a caller that asks again)."""
    ids = {m.node.id for m in shown}
    summaries = [m.node.id for m in shown if m.node.kind == "summary"]
    sources = {} if known is None else known
    missing = [i for i in summaries if i not in sources]
    if missing:
        sources.update(graph.summarized(missing))
    out = set()
    for node_id in summaries:
        found = sources[node_id]
        if found and all(chatter for source, chatter in found if source not in ids):
            out.add(node_id)
    return out


def context_breadth(query: str, budget: int, config: AtlasConfig) -> tuple[int, float]:
    """How many memories to recall for a context of ``budget`` tokens, and the diversity of
    their packing order: ``context_candidates`` per token (20 to 400), and for a list or count
    question (`shared_core.formulas.questions.analyze_query`) ``list_candidates`` times as many
    (at most 400) packed with ``list_diversity``; other questions are packed by score (0).

    >>> context_breadth("What are Kate's hobbies?", 2000, AtlasConfig(list_candidates=1.5, list_diversity=0.3))
    (150, 0.3)
    >>> context_breadth("When did Kate move?", 2000, AtlasConfig(list_candidates=1.5))
    (100, 0.0)
    """
    top_k = min(400, max(20, math.ceil(budget * config.context_candidates)))
    if config.list_candidates == 1.0 and config.list_diversity == 0.0:
        return top_k, 0.0  # lists are treated like any question: no need to analyse the query
    if analyze_query(query).aggregate:
        return min(400, math.ceil(top_k * config.list_candidates)), config.list_diversity
    return top_k, 0.0


def diversify(hits: Sequence[ScoredMemory], vectors: VectorIndex, diversity: float) -> list[ScoredMemory]:
    """``hits`` (best first) in maximal-marginal-relevance order over their stored vectors
    (`shared_core.formulas.diversity.mmr_order`), the priority in which a context packs them;
    unchanged when ``diversity`` is 0. A hit whose vector is missing keeps its score and is
    similar to nothing."""
    if diversity <= 0 or len(hits) < 2:
        return list(hits)
    rows = vectors.get_many([h.node.id for h in hits])
    dim = next((len(r) for r in rows if r is not None), 0)
    if dim == 0:
        return list(hits)
    mat = np.zeros((len(hits), dim), dtype=np.float32)
    for i, row in enumerate(rows):
        if row is not None:
            mat[i] = row
    return [hits[i] for i in mmr_order([max(h.score, 0.0) for h in hits], mat, diversity=diversity)]
