"""Contradictions on add: pluggable detectors, an LLM-free default and a validated LLM one.

When the check is on (``AtlasConfig(contradiction_check=True)`` or a detector passed to the
atlas), each new memory is compared with its ``contradiction_neighbors`` nearest current
memories of the namespace (cosine >= ``contradiction_similarity``). A contradicted older memory
gets a ``contradicts`` edge from the new one, its ``valid_to`` set and its weight multiplied by
``contradiction_factor``; it is never deleted and `retrieve(include_history=True)` still finds it.

`HeuristicContradictionDetector` (the default) aligns the two statements word by word and flags
a pair that says the same thing about the same subject except for a number, a date, a negation
or, after a verb such as "is", "prefers" or "lives", a named value. `LLMContradictionDetector`
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
from collections.abc import Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Any, Protocol, runtime_checkable

from ...text.llm import call_llm
from ...values.model import MemoryNode
from .write_filter import MONTHS, WEEKDAYS, _set

__all__ = [
    "Conflict",
    "Contradiction",
    "ContradictionDetector",
    "HeuristicContradictionDetector",
    "LLMContradictionDetector",
    "different_values",
    "parse_contradiction_answer",
    "value_conflict",
]

logger = logging.getLogger("shared_core")

_TOKEN = re.compile(r"\d+(?:[.,:/-]\d+)*(?:am|pm|st|nd|rd|th|k|%)?|[a-z]+(?:'[a-z]+)?")
_CONTRACTIONS = {"won't": "will not", "can't": "can not", "cannot": "can not", "shan't": "shall not"}
NEGATIONS = _set("not no never none nobody nothing neither nor without")
#: words whose insertion or removal does not change what a statement asserts
FILLER = _set("now actually still also really currently just then recently do does did the a an indeed "
              "definitely anymore")
#: verbs and words after which a statement holds one value at a time ("is", "prefers", "lives in")
FUNCTIONAL = _set("is are was were am be been s prefers prefer preferred lives live lived living moved moving "
                  "works work worked called named costs cost leaves leave arrives arrive starts start begins "
                  "ends end born favourite favorite uses drives set changed equals scheduled due")
_DATE_TOKEN = re.compile(r"^\d{4}-\d{2}-\d{2}$|^\d{1,2}[:.]\d{2}$|^\d{1,2}(am|pm)$|^\d{1,2}/\d{1,2}$")


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
        lowered = lowered.replace(short, long)
    lowered = re.sub(r"n't\b", " not", lowered).replace("no longer", "not")
    return _TOKEN.findall(lowered)


def _is_date(tokens: Sequence[str], context: Sequence[str]) -> bool:
    if any(t in MONTHS or t in WEEKDAYS or _DATE_TOKEN.match(t) for t in tokens):
        return True
    return any(t[:1].isdigit() for t in tokens) and any(c in MONTHS for c in context)


def value_conflict(new: str, old: str) -> Conflict | None:
    """Whether ``new`` contradicts ``old`` by the LLM-free rule, and how.

    The word sequences are aligned (`difflib`); they must share at least half their words in
    order, and differ in at most ``max(3, 0.4 * length)`` content words (filler such as "now"
    or "actually" does not count). Then:

    - **negation**: one says "not"/"never"/"no longer" an odd number of times more;
    - **number** or **date**: a number or date replaced by another, in the second half of the
      statement (the first half names the subject: "Room 12 is booked" vs "Room 14 is booked" is
      two rooms, not a contradiction);
    - **value**: another word replaced in the second half, at most three words after a
      functional word such as "is", "prefers" or "lives" ("likes" is not: one can like tea and
      coffee; "is planning a trip to Porto" is not: one can plan two trips).

    Inserted detail alone ("lives in Paris" -> "lives in Paris with her cat") is no conflict.

    >>> value_conflict("The meeting is at 5pm", "The meeting is at 3pm").kind
    'date'
    >>> value_conflict("I have 3 cats", "I have 2 cats").describe()
    'number changed: 2 -> 3'
    >>> value_conflict("I don't eat meat", "I eat meat").kind
    'negation'
    >>> value_conflict("Room 14 is booked", "Room 12 is booked") is None
    True
    """
    a, b = _tokens(old), _tokens(new)
    if len(a) < 3 or len(b) < 3:
        return None
    ops = SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    equal = sum(i2 - i1 for tag, i1, i2, _, _ in ops if tag == "equal")
    if equal < 0.5 * max(len(a), len(b)):
        return None
    changed = [w for tag, i1, i2, j1, j2 in ops if tag != "equal" for w in (*a[i1:i2], *b[j1:j2])
               if w not in FILLER]
    if not changed or len(changed) > max(3.0, 0.4 * max(len(a), len(b))):
        return None
    neg_a, neg_b = sum(w in NEGATIONS for w in a), sum(w in NEGATIONS for w in b)
    if neg_a % 2 != neg_b % 2:
        return Conflict("negation", tuple(w for w in a if w in NEGATIONS), tuple(w for w in b if w in NEGATIONS))
    for tag, i1, i2, j1, j2 in ops:
        removed = [w for w in a[i1:i2] if w not in FILLER]
        added = [w for w in b[j1:j2] if w not in FILLER]
        if tag == "equal" or not removed or not added or i1 < len(a) / 2:
            continue
        context = a[max(0, i1 - 2):i2 + 2] + b[max(0, j1 - 2):j2 + 2]
        if _is_date(removed + added, context):
            return Conflict("date", tuple(removed), tuple(added))
        if any(w[:1].isdigit() for w in removed + added):
            return Conflict("number", tuple(removed), tuple(added))
        if any(w in FUNCTIONAL for w in a[max(0, i1 - 3):i1]):
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
