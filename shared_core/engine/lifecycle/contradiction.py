"""Contradictions on add: pluggable detectors, an LLM-free default and a validated LLM one.

When the check is on (``AtlasConfig(contradiction_check=True)`` or a detector passed to the
atlas), each new memory is compared with its ``contradiction_neighbors`` nearest current
memories of the namespace (cosine >= ``contradiction_similarity``). A contradicted older memory
gets a ``contradicts`` edge from the new one, its ``valid_to`` set and its weight multiplied by
``contradiction_factor``; it is never deleted and `retrieve(include_history=True)` still finds it.

`HeuristicContradictionDetector` (the default) aligns the two statements by word stems
(PyStemmer's Snowball English) and flags a pair that says the same thing about the same subject
except for a number, a date (read by python-dateutil, so "5pm" and "17:00" agree), a negation or,
after a verb such as "is", "prefers" or "lives", a named value; a different subject, added
detail, two past events and "not at 5pm" against "at 3pm" are no contradiction.
``benchmarks/lifecycle_quality.py`` measures it on labelled pairs. `LLMContradictionDetector`
asks a model and validates its JSON answer; a malformed answer is logged and changes nothing.

>>> value_conflict("User now prefers soy milk", "User prefers oat milk").kind
'value'
>>> value_conflict("I like tea", "I like coffee") is None   # both can be true
True
"""

from __future__ import annotations

import json
import logging
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import Stemmer
from dateutil import parser as dateutil_parser

from ...text.llm import call_llm
from ...values.model import MemoryEdge, MemoryNode, Relation
from .write_filter import MONTHS, WEEKDAYS, _set

if TYPE_CHECKING:
    from ..state import EngineState
    from .namespaces import NamespaceBook

__all__ = [
    "Conflict",
    "Contradiction",
    "ContradictionDetector",
    "HeuristicContradictionDetector",
    "LLMContradictionDetector",
    "check_contradictions",
    "different_values",
    "parse_contradiction_answer",
    "value_conflict",
]

logger = logging.getLogger("shared_core")

_TOKEN = re.compile(r"\d+(?:[.,:/-]\d+)*(?:am|pm|st|nd|rd|th|k|%)?|[a-z]+(?:'[a-z]+)?")
_CONTRACTIONS = {"won't": "will not", "can't": "can not", "cannot": "can not", "shan't": "shall not",
                 "i'm": "i am", "it's": "it is", "she's": "she is", "he's": "he is", "we're": "we are",
                 "they're": "they are", "you're": "you are"}
NEGATIONS = _set("not no never none nobody nothing neither nor without")
#: words whose insertion or removal does not change what a statement asserts
FILLER = _set("now actually still also really currently just then recently do does did the a an indeed "
              "definitely anymore")
#: verbs and words after which a statement holds one value at a time ("is", "prefers", "lives in")
FUNCTIONAL = _set("is are was were am be been s prefers prefer preferred lives live lived living moved moving "
                  "works work worked called named costs cost leaves leave arrives arrive starts start begins "
                  "ends end born favourite favorite uses drives set changed equals scheduled due turns turned "
                  "moves relocated")
#: words that end a statement's subject: the first of them (or of `FUNCTIONAL`) starts what is said about it
VERBS = _set("has have had owns own takes take goes go went gets get got makes make runs run pays pay "
             "speaks speak studies study teaches teach plays play likes like loves love hates hate "
             "visited visit met meet drink drinks eat eats said says will would can could should must "
             "expires expire opens open closes close weighs weigh measures")
NUMBER_WORDS = _set("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
                    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
                    "eighty ninety hundred thousand million")
#: past tenses that tell of an event, and the past tenses that change a state instead
PAST_EVENTS = _set("went met saw had took bought made got ate drank ran wrote sent gave found came left heard "
                   "visited watched called played cooked tried read spoke told")
STATE_CHANGES = _set("moved relocated turned changed switched married divorced renamed rescheduled moved")
BE = _set("is are was were am be been")
_DIGITS = {w: str(i) for i, w in enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven", "eight",
                                           "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen",
                                           "sixteen", "seventeen", "eighteen", "nineteen", "twenty"))}
_stemmer = Stemmer.Stemmer("english")
_stem_lock = threading.Lock()  # a Stemmer must not be used by two threads at once
_FUNCTIONAL_STEMS = frozenset(_stemmer.stemWords(sorted(FUNCTIONAL - _set("favourite favorite s set due"))))
_VERB_STEMS = _FUNCTIONAL_STEMS | frozenset(_stemmer.stemWords(sorted(VERBS)))
_DATE_TOKEN = re.compile(r"^\d{4}-\d{2}-\d{2}$|^\d{1,2}[:.]\d{2}(am|pm)?$|^\d{1,2}(am|pm)$|^\d{1,2}/\d{1,2}$")
_DEFAULT_DAY = datetime(2000, 1, 1)


@dataclass(frozen=True, slots=True)
class Conflict:
    """Why two statements cannot both hold: ``kind`` and the words that differ."""

    kind: str  # "number", "date", "negation" or "value"
    old: tuple[str, ...]
    new: tuple[str, ...]

    def describe(self) -> str:
        if self.kind == "negation":
            return "one statement negates the other"
        return f"{self.kind} changed: {' '.join(self.old) or '-'} -> {' '.join(self.new) or '-'}"


def _tokens(text: str) -> list[str]:
    lowered = text.lower().replace("’", "'")
    for short, long in _CONTRACTIONS.items():
        lowered = re.sub(rf"\b{re.escape(short)}\b", long, lowered)
    lowered = re.sub(r"n't\b", " not", lowered).replace("no longer", "not")
    lowered = re.sub(r"\b(\d{1,2})(?::00)?\s*([ap])\.?m\b\.?", r"\1\2m", lowered)  # "5 p.m.", "5:00 pm" -> "5pm"
    words = [re.sub(r"^(\d+)(st|nd|rd|th)$", r"\1", t) for t in _TOKEN.findall(lowered)]
    return [_DIGITS.get(w, w) for w in words]


def _stems(words: list[str]) -> list[str]:
    """Snowball English stems (PyStemmer), so "likes" and "like", "allows" and "allow" align."""
    with _stem_lock:
        return list(_stemmer.stemWords(words))


def _is_number(word: str) -> bool:
    return word[:1].isdigit() or word in NUMBER_WORDS


def _is_date(tokens: Sequence[str], context: Sequence[str]) -> bool:
    if any(t in MONTHS or t in WEEKDAYS or _DATE_TOKEN.match(t) for t in tokens):
        return True
    return any(t[:1].isdigit() for t in tokens) and any(c in MONTHS for c in context)


def _moment(tokens: Sequence[str]) -> datetime | None:
    """The date or time ``tokens`` name (python-dateutil's parser), or None."""
    try:
        moment: datetime = dateutil_parser.parse(" ".join(tokens), default=_DEFAULT_DAY)
    except (ValueError, OverflowError):
        return None
    return moment


def _date_span(words: Sequence[str], i1: int, i2: int) -> list[str]:
    """``words[i1:i2]`` widened by the month, weekday, number and am/pm words next to it."""
    def part(w: str) -> bool:
        return w in MONTHS or w in WEEKDAYS or w[:1].isdigit() or w in ("am", "pm")
    while i1 > 0 and part(words[i1 - 1]):
        i1 -= 1
    while i2 < len(words) and part(words[i2]):
        i2 += 1
    return list(words[i1:i2])


def _subject_end(words: Sequence[str], stems: Sequence[str]) -> tuple[int, bool]:
    """Where a statement's subject ends (its first verb or negation, else its middle), and
    whether that verb tells of a past event ("we watched a movie on Friday": another Friday's
    movie does not contradict it) rather than a state ("is", "lives") or a change of one ("moved")."""
    for i, (w, stem) in enumerate(zip(words, stems, strict=True)):
        if i > 0 and (stem in _VERB_STEMS or w in NEGATIONS or (w.endswith("ed") and len(w) > 4)
                      or w in PAST_EVENTS):
            event = (w in PAST_EVENTS or w.endswith("ed")) and w not in STATE_CHANGES \
                and words[i - 1] not in BE and not BE & set(words[i + 1:])
            return i, event
    return len(words) // 2, False


def value_conflict(new: str, old: str, *, min_shared: float = 0.5, max_span: int = 4) -> Conflict | None:
    """Whether ``new`` contradicts ``old`` by the LLM-free rule, and how.

    The word sequences are aligned (`difflib`) after normalising contractions, times ("5 p.m."
    -> "5pm") and ordinals; they must share at least ``min_shared`` of the longer one's words
    in order. Filler ("now", "actually") and pure insertions (added detail: "lives in Paris"
    -> "lives in Paris with her cat") do not count. Then:

    - **negation**: one says "not"/"never"/"no longer" an odd number of times more, and nothing
      else differs ("is at 3pm" vs "is not at 5pm" says two compatible things);
    - otherwise exactly one span of at most ``max_span`` words must be replaced, after the
      subject (which ends at the first verb: "Room 12 is booked" vs "Room 14 is booked" is two
      rooms), in statements that negate nothing ("is not at 5pm" vs "is not at 3pm" both hold):
      a **date** (python-dateutil reads both spans; "5pm" and "17:00" are the same time), a
      **number** ("34 years old" -> "35"), or a **value** within three words after a
      functional word such as "is", "prefers", "lives" ("likes" is not: one can like tea and
      coffee).

    >>> value_conflict("The meeting is at 5pm", "The meeting is at 3pm").kind
    'date'
    >>> value_conflict("I have 3 cats", "I have 2 cats").describe()
    'number changed: 2 -> 3'
    >>> value_conflict("I don't eat meat", "I eat meat").kind
    'negation'
    >>> value_conflict("Maya lives in San Francisco", "Maya lives in New York").describe()
    'value changed: new york -> san francisco'
    >>> value_conflict("The meeting is not at 5pm", "The meeting is at 3pm") is None
    True
    >>> value_conflict("Room 14 is booked", "Room 12 is booked") is None
    True
    """
    a, b = _tokens(old), _tokens(new)
    if len(a) < 2 or len(b) < 2:
        return None
    sa = _stems(a)
    ops = SequenceMatcher(None, sa, _stems(b), autojunk=False).get_opcodes()
    equal = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    if equal < min_shared * max(len(a), len(b)):
        return None
    diffs = []
    for tag, i1, i2, j1, j2 in ops:
        removed = [w for w in a[i1:i2] if w not in FILLER]
        added = [w for w in b[j1:j2] if w not in FILLER]
        if tag != "equal" and (removed or added):
            diffs.append((i1, i2, j1, j2, removed, added))
    neg_a, neg_b = sum(w in NEGATIONS for w in a), sum(w in NEGATIONS for w in b)
    values = [d for d in diffs if {*d[4], *d[5]} - NEGATIONS]
    if neg_a % 2 != neg_b % 2:
        if values:
            return None
        return Conflict("negation", tuple(w for w in a if w in NEGATIONS), tuple(w for w in b if w in NEGATIONS))
    subject, event = _subject_end(a, sa)
    if event or any(d[0] < subject for d in values):
        return None  # two events, or another subject ("my shoe size" -> "my son's shoe size")
    values = [d for d in values if d[4]]  # a pure insertion after the subject is added detail
    if len(values) != 1 or neg_a or neg_b:
        return None
    i1, i2, j1, j2, removed, added = values[0]
    if not added or len(removed) > max_span or len(added) > max_span:
        return None
    context = a[max(0, i1 - 2):i2 + 2] + b[max(0, j1 - 2):j2 + 2]
    if _is_date(removed + added, context):
        before, after = _moment(_date_span(a, i1, i2)), _moment(_date_span(b, j1, j2))
        if before is not None and before == after:
            return None
        return Conflict("date", tuple(removed), tuple(added))
    if any(_is_number(w) for w in removed + added):
        return Conflict("number", tuple(removed), tuple(added))
    if any(w in FUNCTIONAL or stem in _FUNCTIONAL_STEMS
           for w, stem in zip(a[max(0, i1 - 3):i1], sa[max(0, i1 - 3):i1], strict=True)):
        return Conflict("value", tuple(removed), tuple(added))
    return None


def different_values(a: str, b: str) -> bool:
    """Whether two texts state different facts although worded alike: they name different
    numbers or dates anywhere, one negates the other, or `value_conflict` sees a changed value.
    Near-duplicates that differ so are never merged.

    >>> different_values("fact number 1 about the kitchen", "fact number 2 about the kitchen")
    True
    >>> different_values("User prefers oat milk", "user prefers oat milk!")
    False
    """
    ta, tb = _tokens(a), _tokens(b)

    def values(tokens: list[str]) -> set[str]:
        return {w for w in tokens if w[:1].isdigit() or w in MONTHS or w in WEEKDAYS}

    negated = sum(w in NEGATIONS for w in ta) % 2 != sum(w in NEGATIONS for w in tb) % 2
    return values(ta) != values(tb) or negated or value_conflict(a, b) is not None \
        or value_conflict(b, a) is not None


@dataclass(frozen=True, slots=True)
class Contradiction:
    """A detector's finding: the new memory contradicts the memory ``old_id``."""

    old_id: str
    kind: str
    reason: str


@runtime_checkable
class ContradictionDetector(Protocol):
    """Given a new memory and its nearest current memories, name the ones it contradicts."""

    def detect(self, new: MemoryNode, candidates: Sequence[MemoryNode]) -> list[Contradiction]: ...


class HeuristicContradictionDetector:
    """The LLM-free default: `value_conflict` against each candidate."""

    def detect(self, new: MemoryNode, candidates: Sequence[MemoryNode]) -> list[Contradiction]:
        found = []
        for old in candidates:
            conflict = value_conflict(new.content, old.content)
            if conflict is not None:
                found.append(Contradiction(old.id, conflict.kind, conflict.describe()))
        return found

    def __repr__(self) -> str:
        return "HeuristicContradictionDetector()"


_PROMPT = (
    "You keep a memory store consistent. A NEW statement was just stored. For each numbered EARLIER "
    "statement, decide whether the NEW one contradicts it: both cannot be true now (a changed value, "
    "number, date, place or preference, or a negation). Extra detail or a different topic is not a "
    "contradiction.\n\nNEW: {new}\n\nEARLIER:\n{earlier}\n\nAnswer with JSON only, for example "
    '{{"contradicted": [2], "reason": "the meeting moved from 3pm to 5pm"}} or {{"contradicted": []}}.'
)


def parse_contradiction_answer(answer: str, n: int) -> tuple[list[int], str] | None:
    """The 1-based indices (each in ``1..n``, no repeats) and reason in a model's answer, or
    None if the answer is not that JSON object.

    >>> parse_contradiction_answer('```json\\n{"contradicted": [2], "reason": "moved"}\\n```', 3)
    ([2], 'moved')
    >>> parse_contradiction_answer('{"contradicted": [4]}', 3) is None
    True
    >>> parse_contradiction_answer("Yes, number 2.", 3) is None
    True
    """
    start = answer.find("{")
    if start < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(answer[start:])
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get("contradicted"), list):
        return None
    indices = value["contradicted"]
    reason = value.get("reason", "")
    if not isinstance(reason, str) or len(set(map(repr, indices))) != len(indices):
        return None
    if any(isinstance(i, bool) or not isinstance(i, int) or not 1 <= i <= n for i in indices):
        return None
    return list(indices), reason


class LLMContradictionDetector:
    """Asks a model (LangChain chat model, LlamaIndex LLM or ``str -> str`` callable).

    The answer must be ``{"contradicted": [indices], "reason": "..."}``; anything else, or a
    failing call, is logged and yields no contradiction, so no memory is lost to a bad answer.
    """

    def __init__(self, llm: Any) -> None:
        self.llm = llm

    def detect(self, new: MemoryNode, candidates: Sequence[MemoryNode]) -> list[Contradiction]:
        if not candidates:
            return []
        earlier = "\n".join(f"{i + 1}. {c.content}" for i, c in enumerate(candidates))
        try:
            answer = call_llm(self.llm, _PROMPT.format(new=new.content, earlier=earlier))
        except Exception:
            logger.exception("contradiction check: the model call failed; nothing changed")
            return []
        parsed = parse_contradiction_answer(answer, len(candidates))
        if parsed is None:
            logger.warning("contradiction check: malformed model answer %r; nothing changed", answer[:300])
            return []
        indices, reason = parsed
        return [Contradiction(candidates[i - 1].id, "model", reason or "the model found a contradiction")
                for i in indices]

    def __repr__(self) -> str:
        return f"LLMContradictionDetector({type(self.llm).__name__})"


def check_contradictions(state: EngineState, detector: ContradictionDetector, node: MemoryNode, *,
                         namespaces: NamespaceBook) -> None:
    """Ask ``detector`` about ``node`` and its nearest current memories, and mark what it finds
    (after a write, outside the lock: the lock is taken to read the candidates and to mark them).

    A contradicted memory gets ``valid_to`` now, its weight times ``contradiction_factor`` (not
    below ``weight_floor``) and a ``contradicts`` edge from ``node``; a detector that fails or
    answers with an id it was not given changes nothing (logged)."""
    cfg = state.config
    with state.lock:
        part = state.backend.partition(node.namespace)
        if part is None or node.embedding is None or part.graph.get_node(node.id) is None:
            return
        now = state.clock.now()
        candidates: list[MemoryNode] = []
        for other, sim in part.vectors.search(node.embedding, cfg.contradiction_neighbors + 17):
            old = part.graph.get_node(other)
            if sim < cfg.contradiction_similarity or len(candidates) >= cfg.contradiction_neighbors:
                break
            if old is not None and old.id != node.id and old.kind == "memory" and old.turn < node.turn \
                    and old.id not in part.inactive and old.is_current(now):
                candidates.append(old)
    if not candidates:
        return
    try:
        found = detector.detect(node, candidates)
    except Exception:
        logger.exception("contradiction detector %r failed; nothing changed", detector)
        return
    allowed = {c.id for c in candidates}
    if not isinstance(found, list) or not all(isinstance(c, Contradiction) and c.old_id in allowed
                                              for c in found):
        logger.warning("contradiction detector %r gave a malformed answer %r; nothing changed",
                       detector, found)
        return
    with state.lock:
        now = state.clock.now()
        if part.graph.get_node(node.id) is None:
            return
        for c in found:
            old = part.graph.get_node(c.old_id)
            if old is None or old.valid_to is not None or old.id in part.inactive:
                continue
            weight = max(cfg.weight_floor, old.weight * cfg.contradiction_factor)
            part.graph.put_node(replace(old, valid_to=now, weight=weight))
            part.inactive.add(old.id)
            namespaces.touch((part.namespace,))
            part.graph.put_edge(MemoryEdge(source=node.id, target=old.id, relation=Relation.CONTRADICTS,
                                           strength=1.0, created_at=now,
                                           metadata={"kind": c.kind, "reason": c.reason}))
            state.events.emit("contradict", namespace=part.namespace, node_id=old.id, at=now,
                              reason=c.reason, by=node.id, conflict=c.kind, weight=weight)
