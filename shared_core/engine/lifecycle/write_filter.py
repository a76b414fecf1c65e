"""The write filter: an importance score on add, and the working memory that holds what it keeps out.

With ``AtlasConfig(write_filter=True)`` (or a `WriteFilter` passed to the atlas), each new turn
is scored before it is embedded. A turn scoring below ``write_threshold`` ("ok thanks", "hi!")
is not written to the graph: it stays in its session's `WorkingBuffer`, whose latest turns
`ElasticMemoryAtlas.build_context` shows in the working-memory tier, and which keeps the held
part of the session's transcript. A write that states intent always passes: an explicit
``importance``, ``pinned=True``, ``keep=True`` or explicit links (the tools of both adapters and
the MCP server write with ``keep=True``). A held turn comes back with ``kind="working"`` and a
``wm-`` id that `get`, `update_memory` and `forget` accept.

The default score is LLM-free (`importance_score`); `LLMWriteFilter` asks a model instead and
falls back to the heuristic when the answer is not a number in [0, 1].

>>> importance_score("ok thanks!")
0.0
>>> importance_score("Please remember that my passport number is X1234567") == 1.0
True
"""

from __future__ import annotations

import json
import logging
import re
from collections import OrderedDict, deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any, Protocol, runtime_checkable

from ...text.llm import call_llm
from ...values.model import MemoryNode

__all__ = [
    "HeuristicWriteFilter",
    "LLMWriteFilter",
    "Salience",
    "WorkingBuffer",
    "WriteFilter",
    "importance_score",
    "salience",
]

logger = logging.getLogger("shared_core")

_WORD = re.compile(r"[A-Za-z][A-Za-z'’]*|\d+(?:[.,:/-]\d+)*")


def _set(words: str) -> frozenset[str]:
    return frozenset(words.split())


MONTHS = _set("january february march april may june july august september october november december "
              "jan feb mar apr jun jul aug sep sept oct nov dec")
WEEKDAYS = _set("monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight "
                "yesterday weekend")
_DATE = re.compile(r"\b\d{4}-\d{2}-\d{2}\b|\b\d{1,2}[:.]\d{2}\b|\b\d{1,2}\s?(?:am|pm)\b|\b\d{1,2}/\d{1,2}\b",
                   re.I)
_NUMBER = re.compile(r"\d")
_QUESTION_START = _set("what when where who whom whose why how which can could would should is are do does "
                       "did will shall may")
_ACTION = _set("decide decided decision agree agreed choose chose chosen plan planned planning book booked "
               "buy bought order ordered schedule scheduled cancel cancelled canceled move moved moving "
               "start started stop stopped switch switched pay paid sign signed send sent call meet "
               "will going need needs must should todo deadline due remind reminder promise promised")
_PREFERENCE = _set("like likes love loves hate hates prefer prefers preferred favourite favorite allergic "
                   "allergy always never enjoy enjoys dislike dislikes vegan vegetarian want wants "
                   "name live lives work works born birthday")
SMALL_TALK = _set("hi hello hey hiya yo ok okay k kk thanks thank thx ty you u cool nice great awesome "
                  "sure yes yeah yep no nope bye goodbye cya lol haha hmm um uh oh ah good morning "
                  "evening night afternoon sounds fine alright right got it welcome cheers np problem "
                  "see later wow oops please too very so much the a and how are is it going what's whats "
                  "up doing am i me think guess maybe "
                  # conversation about the conversation: reactions, repair, pacing, chit-chat
                  "i'm i'll i've it's that's let's you're there's that this these those there here what "
                  "do does did can could would will shall be was were been to of for in on at with about "
                  "again more less simply shorter longer repeat explain mean say said tell go on carry "
                  "continue move next back one sec second minute moment hang wait check try really "
                  "true exactly indeed interesting idea point fair enough makes sense helpful help "
                  "helps appreciate asking question questions answer thoughts any anything else all "
                  "everything nothing never mind anyway whatever either works up not sure same too "
                  "well done quick quickly amazing love lovely perfect funny wild crazy way plan "
                  "like just still only now then ever bad sorry my your all good enough for today "
                  "last message typo ignore that's testing hello again quick weather hot cold day "
                  "long ugh huh happy weekend new slept sleep how's where's who's table list format")
#: the turn speaks of the user: in the first person, or as a memory agent notes it ("User owns a dog")
_SELF = re.compile(r"(?:^|[.!?;,]\s*|\band\s+)(?:i|i'm|i've|i'd|i'll|we|we're|we've|my|our|user|user's|"
                   r"the user|the user's)\b(?!\s*\?)", re.I)
_REMEMBER = re.compile(r"\b(remember|don'?t forget|do not forget|note that|keep in mind|make a note|"
                       r"never forget|important)\b", re.I)


@dataclass(frozen=True, slots=True)
class Salience:
    """What makes a turn worth remembering (see `importance_score`)."""

    words: int
    question: bool
    action: bool
    preference: bool
    number: bool
    date: bool
    entity: bool
    remember: bool
    small_talk: bool
    personal: bool = False


def _words(text: str) -> list[str]:
    return _WORD.findall(text)


def salience(text: str) -> Salience:
    """The features of `importance_score`, read from the text alone.

    ``entity`` is a capitalised word that does not open a sentence (and is not "I").

    >>> s = salience("We booked the Lisbon flight for June 12?")
    >>> (s.question, s.action, s.date, s.number, s.entity)
    (True, True, True, True, True)
    """
    words = _words(text)
    lower = [w.lower().replace("’", "'") for w in words]
    stripped = text.strip()
    question = stripped.endswith("?") or (bool(lower) and lower[0] in _QUESTION_START and "?" in stripped)
    entity = False
    for match in _WORD.finditer(text):
        word = match.group()
        before = text[:match.start()].rstrip()
        starts_sentence = not before or before[-1] in ".!?:\n\"'(" or before.endswith("- ")
        if (word[0].isupper() and word != "I" and not starts_sentence and not word.isupper()) \
                or (len(word) > 1 and word.isupper() and word.isalpha() and word != "I" and len(word) <= 6):
            entity = True
            break
    bare = {w.strip("'") for w in lower}
    return Salience(
        words=len(words),
        question=question,
        action=bool(bare & _ACTION) or "going to" in stripped.lower() or "let's" in lower,
        preference=bool(bare & _PREFERENCE) or " my " in f" {stripped.lower()} ",
        number=bool(_NUMBER.search(text)),
        date=bool(_DATE.search(text)) or bool(bare & (MONTHS | WEEKDAYS)),
        entity=entity,
        remember=bool(_REMEMBER.search(text)),
        small_talk=bool(bare) and bare <= SMALL_TALK,
        personal=bool(_SELF.search(stripped.replace("’", "'"))) and not question,
    )


def importance_score(text: str) -> float:
    """How worth remembering a turn is, in [0, 1], from its text alone.

    ``1`` for an explicit request ("remember ...", "don't forget ..."); ``0`` for small talk
    only (every word a greeting, reaction or word about the conversation itself: "ok thanks",
    "hi!", "could you repeat that?") or no words; otherwise
    ``min(1, 0.1 + 0.3 q + 0.3 a + 0.3 p + 0.2 n + 0.2 d + 0.2 e + 0.1 l)`` with ``q`` a
    question, ``a`` an action or decision, ``p`` a preference or a statement about the user
    (first person, or "User ..." as an agent notes it), ``n`` a number, ``d`` a date or time,
    ``e`` a named entity and ``l`` a long turn (12 words or more).

    >>> importance_score("sounds good")
    0.0
    >>> importance_score("the weather is nice"), importance_score("the garden is nice")
    (0.0, 0.1)
    >>> importance_score("I love jazz"), importance_score("User owns a dog")
    (0.4, 0.4)
    >>> importance_score("We decided to fly to Lisbon on June 12")
    1.0
    """
    s = salience(text)
    if s.remember:
        return 1.0
    if s.words == 0 or s.small_talk:
        return 0.0
    score = (0.1 + 0.3 * s.question + 0.3 * s.action + 0.3 * (s.preference or s.personal) + 0.2 * s.number
             + 0.2 * s.date + 0.2 * s.entity + 0.1 * (s.words >= 12))
    return round(min(1.0, score), 6)


@runtime_checkable
class WriteFilter(Protocol):
    """Scores a turn's importance in [0, 1]; below the threshold it stays in working memory."""

    def score(self, text: str) -> float: ...


class HeuristicWriteFilter:
    """The default, LLM-free filter: `importance_score`."""

    def score(self, text: str) -> float:
        return importance_score(text)

    def __repr__(self) -> str:
        return "HeuristicWriteFilter()"


_SCORE_PROMPT = (
    "Rate how important it is for an assistant to remember this conversation turn long-term, from 0 "
    "(small talk, greetings, acknowledgements) to 1 (facts about the user, decisions, plans, dates, numbers, "
    "names, explicit requests to remember). Answer with JSON only: {{\"importance\": <number>}}.\n\nTurn: {text}"
)


def parse_score(answer: str) -> float | None:
    """The number in a model's answer (bare or ``{"importance": x}``), if it is in [0, 1].

    >>> parse_score('{"importance": 0.8}'), parse_score("0.25"), parse_score("very"), parse_score("7")
    (0.8, 0.25, None, None)
    """
    text = answer.strip().strip("`").removeprefix("json").strip()
    try:
        value: Any = json.loads(text)
    except ValueError:
        return None
    if isinstance(value, dict):
        value = value.get("importance")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        return None
    return float(value)


class LLMWriteFilter:
    """Asks a model (LangChain, LlamaIndex or ``str -> str``) for the importance score.

    An answer that is not a number in [0, 1], or a failing call, is logged and the heuristic
    score is used instead, so a bad answer never drops a turn on its own.
    """

    def __init__(self, llm: Any, *, fallback: WriteFilter | None = None) -> None:
        self.llm = llm
        self.fallback = fallback or HeuristicWriteFilter()

    def score(self, text: str) -> float:
        try:
            answer = call_llm(self.llm, _SCORE_PROMPT.format(text=text))
        except Exception:
            logger.exception("write filter: the model call failed; using the heuristic score")
            return self.fallback.score(text)
        value = parse_score(answer)
        if value is None:
            logger.warning("write filter: malformed answer %r; using the heuristic score", answer[:200])
            return self.fallback.score(text)
        return value


class WorkingBuffer:
    """The turns the write filter kept out of the graph, per (namespace, session), newest last.

    It is also the held part of each session's transcript (`ElasticMemoryAtlas.memories` with
    ``include_held=True``), so by default it keeps every held turn until the session ends or the
    turn is forgotten. Bounds are opt-in: ``per_session`` turns per session and ``max_sessions``
    sessions (least recently written dropped first). It keeps its size (turns and UTF-8 bytes of
    text) up to date for the byte accounting, and finds a held turn by its ``wm-`` id.

    >>> from shared_core import MemoryNode
    >>> buffer = WorkingBuffer()
    >>> buffer.add(MemoryNode(id="wm-1", content="ok", namespace="u", session_id="s"))
    >>> buffer.find("wm-1").content, len(buffer)
    ('ok', 1)
    >>> buffer.remove("wm-1").id, len(buffer), buffer.find("wm-1")
    ('wm-1', 0, None)
    """

    def __init__(self, *, per_session: int | None = None, max_sessions: int | None = None) -> None:
        self.per_session = per_session
        self.max_sessions = max_sessions
        self._turns: OrderedDict[tuple[str, str | None], deque[MemoryNode]] = OrderedDict()
        self._ids: dict[str, MemoryNode] = {}
        self.count = 0
        self.text_bytes = 0

    def _forget(self, nodes: Iterable[MemoryNode]) -> None:
        for node in nodes:
            self.count -= 1
            self.text_bytes -= len(node.content.encode("utf-8"))
            self._ids.pop(node.id, None)

    def add(self, node: MemoryNode) -> None:
        key = (node.namespace, node.session_id)
        turns = self._turns.pop(key, None) or deque(maxlen=self.per_session)
        if turns.maxlen is not None and len(turns) == turns.maxlen:
            self._forget([turns[0]])
        turns.append(node)
        self.count += 1
        self.text_bytes += len(node.content.encode("utf-8"))
        self._ids[node.id] = node
        self._turns[key] = turns
        while self.max_sessions is not None and len(self._turns) > self.max_sessions:
            self._forget(self._turns.popitem(last=False)[1])

    def find(self, node_id: str) -> MemoryNode | None:
        """The held turn with this id, if it is still held."""
        return self._ids.get(node_id)

    def remove(self, node_id: str) -> MemoryNode | None:
        """Take one held turn out (forgotten or written with intent); returns it, if it was held."""
        node = self._ids.get(node_id)
        if node is None:
            return None
        key = (node.namespace, node.session_id)
        turns = self._turns[key]
        turns.remove(node)
        self._forget([node])
        if not turns:
            del self._turns[key]
        return node

    def latest(self, namespace: str, session_id: str | None, n: int) -> list[MemoryNode]:
        """The last ``n`` held turns of a session, newest first."""
        turns = self._turns.get((namespace, session_id))
        return [] if not turns or n <= 0 else list(islice(reversed(turns), n))

    def session(self, namespace: str, session_id: str | None) -> list[MemoryNode]:
        """Every held turn of a session, oldest first."""
        return list(self._turns.get((namespace, session_id), ()))

    def drop(self, namespace: str, session_id: str | None) -> int:
        """Forget a session's held turns; returns how many there were."""
        turns = self._turns.pop((namespace, session_id), deque())
        self._forget(turns)
        return len(turns)

    def pop_oldest(self) -> MemoryNode | None:
        """Take out the oldest turn of the least recently written session (the byte cap's
        first victim: a held turn is what the write filter judged least worth keeping)."""
        if not self._turns:
            return None
        key, turns = next(iter(self._turns.items()))
        node = turns.popleft()
        self._forget([node])
        if not turns:
            del self._turns[key]
        return node

    def __iter__(self) -> Iterator[MemoryNode]:
        for turns in list(self._turns.values()):
            yield from turns

    def __len__(self) -> int:
        return self.count
