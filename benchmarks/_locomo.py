"""LoCoMo loading and the evidence-recall metric, shared by the benchmark and its integration test.

The data format, the metric and the known defects are described in
``../shared/data/locomo/README.md``. This module reads only ``conversation`` and ``qa``: never the
generated ``observation``, ``event_summary`` or ``session_summary`` fields.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = [
    "CATEGORIES",
    "Conversation",
    "Question",
    "Turn",
    "config_overrides",
    "default_data_path",
    "evidence_ids",
    "load_locomo",
    "recall_fraction",
    "split_messages",
]

CATEGORIES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop"}
_EVIDENCE = re.compile(r"D\s*:?\s*(\d+)\s*:\s*(\d+)")
_SESSION_KEY = re.compile(r"session_(\d+)")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def config_overrides(items: Iterable[str]) -> dict[str, Any]:
    """``FIELD=VALUE`` items as `AtlasConfig` overrides: each value a Python literal, else the bare
    word as a string.

    >>> config_overrides(["feedback_weight=0.5", "fusion=rrf"])
    {'feedback_weight': 0.5, 'fusion': 'rrf'}
    """
    overrides: dict[str, Any] = {}
    for item in items:
        field, _, value = item.partition("=")
        try:
            overrides[field.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            overrides[field.strip()] = value.strip()
    return overrides


def default_data_path() -> Path:
    """``../shared/data/locomo/locomo_dev.json`` relative to the repository root."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "data" / "locomo" / "locomo_dev.json"


@dataclass(frozen=True, slots=True)
class Turn:
    """One dialogue turn, rendered as the dataset README prescribes."""

    dia_id: str
    session: int
    speaker: str
    text: str
    caption: str | None
    date_text: str  # the session's date as written in the data, e.g. "1:56 pm on 8 May, 2023"
    timestamp: float

    @property
    def content(self) -> str:
        """``"<speaker>: <text>"`` plus ``" [shares <caption>]"`` for a shared photo."""
        shared = f" [shares {self.caption}]" if self.caption else ""
        return f"{self.speaker}: {self.text}{shared}"

    @property
    def dated(self) -> str:
        """The baselines' rendering: ``"<date>: <speaker>: <text> [shares <caption>]"``."""
        return f"{self.date_text}: {self.content}"


@dataclass(frozen=True, slots=True)
class Question:
    question: str
    category: int
    evidence: frozenset[str]


@dataclass(frozen=True, slots=True)
class Conversation:
    sample_id: str
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]  # categories 1-4 with at least one evidence turn
    skipped: int  # questions of categories 1-4 left out: no evidence that names a turn


def evidence_ids(raw: Iterable[str]) -> list[str]:
    """Normalise evidence ids: ``"D:11:26"`` -> ``D11:26``, ``"D30:05"`` -> ``D30:5``, and one
    string holding several ids is split.

    >>> evidence_ids(["D:11:26", "D30:05", "D8:6; D9:17", "D"])
    ['D11:26', 'D30:5', 'D8:6', 'D9:17']
    """
    out: list[str] = []
    for item in raw:
        for session, turn in _EVIDENCE.findall(str(item)):
            out.append(f"D{int(session)}:{int(turn)}")
    return out


def _parse_date(text: str) -> float:
    return datetime.strptime(text.strip(), "%I:%M %p on %d %B, %Y").replace(tzinfo=UTC).timestamp()


def _conversation(item: dict[str, object]) -> Conversation:
    conv = item["conversation"]
    assert isinstance(conv, dict)
    sessions = sorted((int(m.group(1)), key) for key in conv
                      if (m := _SESSION_KEY.fullmatch(key)) and isinstance(conv[key], list))
    turns: list[Turn] = []
    for number, key in sessions:
        date_text = str(conv[f"{key}_date_time"])
        ts = _parse_date(date_text)
        for raw in conv[key]:
            turns.append(Turn(dia_id=evidence_ids([raw["dia_id"]])[0], session=number,
                              speaker=raw["speaker"], text=raw["text"], caption=raw.get("blip_caption"),
                              date_text=date_text, timestamp=ts))
    known = {t.dia_id for t in turns}
    questions: list[Question] = []
    skipped = 0
    qa = item["qa"]
    assert isinstance(qa, list)
    for q in qa:
        if q["category"] not in CATEGORIES:
            continue
        gold = frozenset(e for e in evidence_ids(q.get("evidence", [])) if e in known)
        if not gold:
            skipped += 1
            continue
        questions.append(Question(str(q["question"]), int(q["category"]), gold))
    return Conversation(str(item["sample_id"]), tuple(turns), tuple(questions), skipped)


def load_locomo(path: str | Path, *, conversations: Sequence[str] | None = None,
                limit: int | None = None) -> list[Conversation]:
    """The conversations of a LoCoMo file, optionally only those named or the first ``limit``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    items = [it for it in data if conversations is None or it["sample_id"] in conversations]
    if conversations is not None:
        missing = set(conversations) - {it["sample_id"] for it in items}
        if missing:
            raise SystemExit(f"unknown conversation(s): {', '.join(sorted(missing))}")
    if limit is not None:
        items = items[:limit]
    return [_conversation(it) for it in items]


def recall_fraction(gold: frozenset[str], found: Iterable[str]) -> float:
    """The fraction of the gold evidence turns among ``found``.

    >>> recall_fraction(frozenset({"D1:1", "D2:3"}), ["D2:3", "D5:5"])
    0.5
    """
    return len(gold & set(found)) / len(gold)


def split_messages(conv: Conversation) -> Conversation:
    """The conversation as a chat of short messages: each turn cut after each sentence (``.``,
    ``!`` or ``?`` then a space) into consecutive messages of its speaker, a shared photo's
    caption on the last one; an evidence turn becomes all of its messages (``D1:3`` ->
    ``D1:3.0``, ``D1:3.1``, ...), so R@B tok is the fraction of the evidence's messages in the
    context. A proxy for chats of short messages, where one fact spans several of them.

    >>> t = Turn("D1:1", 1, "Ann", "Hi! Went swimming. Fun.", "a pool", "", 0.0)
    >>> [m.content for m in split_messages(Conversation("c", (t,), (Question("q", 1, frozenset({"D1:1"})),), 0)).turns]
    ['Ann: Hi!', 'Ann: Went swimming.', 'Ann: Fun. [shares a pool]']
    """
    turns: list[Turn] = []
    pieces: dict[str, list[str]] = {}
    for t in conv.turns:
        parts = _SENTENCE_END.split(t.text.strip()) or [t.text]
        for j, part in enumerate(parts):
            dia = f"{t.dia_id}.{j}"
            pieces.setdefault(t.dia_id, []).append(dia)
            turns.append(Turn(dia, t.session, t.speaker, part, t.caption if j == len(parts) - 1 else None,
                              t.date_text, t.timestamp))
    questions = tuple(Question(q.question, q.category, frozenset(p for e in q.evidence for p in pieces[e]))
                      for q in conv.questions)
    return Conversation(conv.sample_id, tuple(turns), questions, conv.skipped)
