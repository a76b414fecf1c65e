"""What shape of answer a query asks for: one fact, or an aggregate (a list or a count).

An aggregate question ("What are Kate's hobbies?", "Which cities have both of them been to?",
"How many times has she been to Paris?", "What kinds of books does he read?") is answered by
several pieces of evidence, usually told in different sessions, so the context that serves it
should cover distinct memories rather than near-duplicates of the best one
(`shared_core.formulas.diversity`). `analyze_query` recognises such questions with a small
table of patterns (`PATTERNS`, data rather than code: each pattern is a name, a kind and a
regular expression), no model and no LLM. A pattern names the cue it found, so a caller can
say why a query was read as a list.

Kinds: ``"count"`` (how many, how often, the number of), ``"list"`` (kinds of, plural
``what``/``which`` questions, ``both``, ``all the``, ``name some``). Anything else is
``"single"``.

>>> analyze_query("How many times has Kate been to Paris?").kind
'count'
>>> shape = analyze_query("Which cities have both of them been to?")
>>> shape.kind, shape.cues
('list', ('which_plural', 'both'))
>>> analyze_query("What are Kate's hobbies?").aggregate
True
>>> analyze_query("When did Kate move to Paris?").kind
'single'
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

__all__ = ["PATTERNS", "QueryShape", "analyze_query"]

Kind = Literal["single", "list", "count"]

# An English plural noun, roughly: a word ending in "s" that is not a possessive, and not one of
# the common words that end in s without being plural ("is", "this", "was", "his", ...).
_PLURAL = r"(?!(?:is|was|has|does|this|his|its|us|yes|as|always|across|news|plus|less)\b)[a-z]+[^s'\W]s"
_WH = r"(?:what|which)"

#: (name, kind, pattern), tried in order on the lower-cased query; every match is a cue, and the
#: kind is ``count`` when any count pattern matches, else ``list`` when any list pattern does.
PATTERNS: tuple[tuple[str, Kind, str], ...] = (
    ("how_many", "count", r"\bhow\s+many\b"),
    ("how_often", "count", r"\bhow\s+(?:often|frequently)\b"),
    ("number_of", "count", r"\b(?:the|a|total)\s+number\s+of\b"),
    ("times", "count", r"\b(?:how\s+many|number\s+of)\s+times\b"),
    ("kinds_of", "list",
     rf"\b(?:(?:kinds|types|sorts|categories|varieties)\s+of|(?:kind|type|sort)\s+of\s+{_PLURAL}\b)"),
    ("which_plural", "list", rf"\b{_WH}\s+(?:[a-z'+/-]+\s+){{0,3}}?{_PLURAL}\s+(?:has|have|does|do|are|were)\b"),
    ("what_has", "list", r"^(?:what|where|which|who)\s+(?:has|have)\b"),
    ("what_are", "list", rf"\b{_WH}\s+(?:are|were)\s+(?:(?:some|all|the|[a-z]+'s?|his|her|their|our|your|my)\s+)"
                         rf"{{1,3}}?(?:[a-z-]+\s+)?{_PLURAL}\b"),
    ("both", "list", r"\bboth\b"),
    ("in_common", "list", r"\b(?:in\s+common|each\s+of\s+them|all\s+(?:the|of\s+the)|every\s+time)\b"),
    ("name_some", "list", r"\b(?:name|list)\s+(?:some|all|a\s+few|several|two|three)\b"),
    ("ways", "list", r"\b(?:in\s+what|what)\s+ways\b"),
)
_COMPILED = tuple((name, kind, re.compile(pattern)) for name, kind, pattern in PATTERNS)


@dataclass(frozen=True, slots=True)
class QueryShape:
    """The shape `analyze_query` read: ``kind`` and the names of the patterns that matched."""

    kind: Kind
    cues: tuple[str, ...] = ()

    @property
    def aggregate(self) -> bool:
        """Whether the answer gathers several pieces of evidence (a list or a count)."""
        return self.kind != "single"


def analyze_query(query: str) -> QueryShape:
    """The shape of ``query``: a count, a list, or a single fact (see `PATTERNS`).

    >>> analyze_query("What kinds of art does Caroline make?")
    QueryShape(kind='list', cues=('kinds_of',))
    >>> analyze_query("What is the name of Maria's puppy?")
    QueryShape(kind='single', cues=())
    """
    text = " ".join(query.lower().replace("’", "'").split())
    cues = tuple(name for name, _, pattern in _COMPILED if pattern.search(text))
    kinds = {kind for name, kind, _ in _COMPILED if name in cues}
    kind: Kind = "count" if "count" in kinds else "list" if "list" in kinds else "single"
    return QueryShape(kind, cues)
