"""Summary text for compression: an extractive default and an optional, validated LLM.

The extractive summary keeps the sentences that carry numbers, dates, names, decisions,
preferences and explicit requests, drops greetings and repetition, and keeps the original
order within a character budget. `LLMSummarizer` asks a model instead and falls back to the
extractive summary when the answer is empty, too long or the call fails.

>>> extractive_summary(["Hi there!", "We booked the hotel in Porto for May 3.",
...                     "Thanks!", "We booked the hotel in Porto for May 3"])
'We booked the hotel in Porto for May 3.'
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ...formulas.subqueries import speaker_of
from ...text.llm import call_llm
from .write_filter import salience

__all__ = ["MAX_SUMMARY_RATIO", "ExtractiveSummarizer", "LLMSummarizer", "Summarizer", "capped_summary",
           "extractive_summary", "sentence_value", "word_count"]

#: A summary holds at most this share of its sources' words (else it is cut back, or not written).
MAX_SUMMARY_RATIO = 0.5

logger = logging.getLogger("shared_core")

_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=\S)")
_WORDS = re.compile(r"\w+")
_REQUEST = re.compile(r"\b(please|can you|could you|would you|i need|i want|i'd like|make sure|remind me)\b", re.I)
_ROLE = re.compile(r"^(assistant|user|ai|human|system)\s*:\s*", re.I)


def sentence_value(sentence: str) -> float:
    """How much a sentence is worth keeping in a summary (0: greeting or filler).

    ``3 remember + 2 action + 2 request + 1.5 number + 1.5 date + 1 entity + 1 preference +
    0.5 question``, with the features of `shared_core.engine.lifecycle.write_filter.salience`.

    >>> sentence_value("Thanks, bye!")
    0.0
    >>> sentence_value("Please book the 7:05 flight to Lisbon.")
    8.0
    """
    s = salience(sentence)
    if s.words == 0 or (s.small_talk and not s.remember):
        return 0.0
    return (3.0 * s.remember + 2.0 * s.action + 2.0 * bool(_REQUEST.search(sentence)) + 1.5 * s.number
            + 1.5 * s.date + 1.0 * s.entity + 1.0 * s.preference + 0.5 * s.question)


def _norm(sentence: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORDS.findall(sentence))


def extractive_summary(texts: Sequence[str], *, max_chars: int = 600) -> str:
    """Join the valuable sentences of ``texts``, in order, within ``max_chars``.

    Sentences worth 0 (`sentence_value`: greetings, thanks, filler) and repeats (80% of the
    words of a kept sentence) are dropped; if the rest is over ``max_chars``, the least valuable
    go first; if nothing has value, the first sentences are kept. A role label ("User: ",
    "Assistant: ") is dropped; a chat line's speaker label ("Kate: ", `speaker_of`) is kept on
    each of its sentences, so that the summary says who said what (the compression and session
    summaries read each memory as its labelled line: `shared_core.formulas.subqueries.labelled`).

    >>> extractive_summary(["User: I moved to Berlin in 2021.", "Assistant: Nice!", "I work at Zalando"])
    'I moved to Berlin in 2021. I work at Zalando.'
    >>> extractive_summary(["Kate: Hi! I moved to Berlin in 2021.", "Tom: I work at Zalando"])
    'Kate: I moved to Berlin in 2021. Tom: I work at Zalando.'
    """
    seen: list[frozenset[str]] = []
    candidates: list[tuple[int, float, str]] = []
    for text in texts:
        who = None if _ROLE.match(text) else speaker_of(text)
        body = text if who is None else text.split(":", 1)[1]
        for raw in _SENTENCE.split(body.strip()):
            sentence = _ROLE.sub("", " ".join(raw.split()))
            words = _norm(sentence) | ({who.lower()} if who is not None else set())
            if not sentence or any(len(words & s) >= 0.8 * max(len(words), len(s)) for s in seen):
                continue
            seen.append(words)
            if sentence[-1] not in ".!?…":
                sentence += "."
            value = sentence_value(sentence)  # of the sentence alone: "Kate: Hi!" is a greeting
            candidates.append((len(candidates), value, sentence if who is None else f"{who}: {sentence}"))
    valuable = [c for c in candidates if c[1] > 0] or candidates[:3]
    kept = sorted(valuable, key=lambda c: (-c[1], c[0]))
    chosen: list[tuple[int, float, str]] = []
    used = 0
    for c in kept:
        if used + len(c[2]) + 1 <= max_chars or not chosen:
            chosen.append(c)
            used += len(c[2]) + 1
    text = " ".join(c[2] for c in sorted(chosen))
    return text if len(text) <= max_chars else text[: max_chars - 1].rstrip() + "…"


def word_count(text: str) -> int:
    """Words (``\\w+`` runs) in ``text``: the unit of the summary cap, a model-free stand-in for tokens."""
    return len(_WORDS.findall(text))


def capped_summary(text: str, texts: Sequence[str], *, ratio: float = MAX_SUMMARY_RATIO) -> str | None:
    """``text`` if it holds at most ``ratio`` of the words of ``texts``; else the sentences of
    ``text`` most worth keeping (`sentence_value`, earlier first on ties) that fit in that many
    words, in their order; None when not even one fits (nothing shorter than the sources).

    >>> texts = ["We paid 40 euros.", "The train left at 9:15.", "It was 3 hours late.", "Room 12 was cold."]
    >>> capped_summary(" ".join(texts), texts)
    'We paid 40 euros. It was 3 hours late.'
    """
    limit = ratio * sum(word_count(t) for t in texts)
    if 0 < word_count(text) <= limit:
        return text
    sentences = [" ".join(raw.split()) for raw in _SENTENCE.split(text.strip()) if raw.strip()]
    ranked = sorted(range(len(sentences)), key=lambda i: (-sentence_value(sentences[i]), i))
    chosen: list[int] = []
    used = 0
    for i in ranked:
        words = word_count(sentences[i])
        if words and used + words <= limit:
            chosen.append(i)
            used += words
    return " ".join(sentences[i] for i in sorted(chosen)) if chosen else None


@runtime_checkable
class Summarizer(Protocol):
    """Texts (oldest first) in, one summary out."""

    def summarize(self, texts: Sequence[str]) -> str: ...


class ExtractiveSummarizer:
    """The LLM-free default: `extractive_summary`."""

    def __init__(self, *, max_chars: int = 600) -> None:
        self.max_chars = max_chars

    def summarize(self, texts: Sequence[str]) -> str:
        return extractive_summary(texts, max_chars=self.max_chars)

    def __repr__(self) -> str:
        return f"ExtractiveSummarizer(max_chars={self.max_chars})"


_PROMPT = (
    "Summarise these memories of a conversation in at most {words} words, as plain sentences. Keep every "
    "number, date, name, decision and explicit request; drop greetings and repetition; add nothing.\n\n{body}"
)


class LLMSummarizer:
    """Asks a model (LangChain, LlamaIndex or ``str -> str``) for the summary.

    An empty answer, one longer than twice ``max_chars`` or a failing call is logged and the
    extractive summary is used instead.
    """

    def __init__(self, llm: Any, *, max_chars: int = 600) -> None:
        self.llm = llm
        self.max_chars = max_chars

    def summarize(self, texts: Sequence[str]) -> str:
        body = "\n".join(f"- {t}" for t in texts)
        try:
            answer = call_llm(self.llm, _PROMPT.format(words=max(20, self.max_chars // 6), body=body)).strip()
        except Exception:
            logger.exception("summary: the model call failed; using the extractive summary")
            return extractive_summary(texts, max_chars=self.max_chars)
        if not answer or len(answer) > 2 * self.max_chars:
            logger.warning("summary: unusable model answer (%d characters); using the extractive summary",
                           len(answer))
            return extractive_summary(texts, max_chars=self.max_chars)
        return answer

    def __repr__(self) -> str:
        return f"LLMSummarizer({type(self.llm).__name__})"
