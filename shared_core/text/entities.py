"""Entities and key phrases of a text: what the entity layer links memories through.

`extract_entities` is LLM-free and offline: YAKE (the ``yake`` package: unsupervised,
statistical, no model and no download) scores the text's candidate phrases of 1 to 3 words
without stopwords at their ends. A text yields

- its **names**: every candidate whose words YAKE tags as proper nouns (capitalised inside a
  sentence) or acronyms, whatever its score ("Lake Tahoe", "LGBTQ", "Caroline");
- its **speaker**: a leading ``"<Name>:"`` label of one or two capitalised words, the usual
  form of a transcript turn (YAKE sees it at the start of a sentence, where case says nothing);
- its best ``phrases`` **key phrases** by YAKE's score (lower is better), names excluded.

A part of a longer name ("tahoe" of "Lake Tahoe") is no entity of its own, nor is a phrase
inside or around a name or a better phrase ("support" of "support group"). Case is the only
cue for names: a name that only ever opens a sentence is not found, and a capitalised label
that is no name ("Yesterday: ...") is taken for a speaker.

Each is returned as a key: lower case, whitespace collapsed, so "Lake  Tahoe" and "lake tahoe"
are one entity. `llm_entities` asks a model instead (the optional hook,
``AtlasConfig.entity_extraction="llm"``) and falls back to `extract_entities` when the model
fails or answers nothing usable.

>>> extract_entities("Caroline: I went to a LGBTQ support group near Lake Tahoe yesterday.")
('caroline', 'lake tahoe', 'lgbtq', 'support group')
>>> extract_entities("")
()
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..values.config import AtlasConfig
from .llm import call_llm

__all__ = ["MAX_ENTITY_CHARS", "entity_key", "entity_keys", "extract_entities", "llm_entities"]

logger = logging.getLogger("shared_core")

#: The longest entity key kept (a longer "name" is a run of capitalised words, not a name).
MAX_ENTITY_CHARS = 64
_MAX_WORDS = 3
_NAME_TAGS = frozenset("na")  # YAKE's tags: n = capitalised inside a sentence, a = acronym
_local = threading.local()


def entity_key(name: str) -> str:
    """The key an entity is stored under: lower case, whitespace collapsed.

    >>> entity_key("  Lake   Tahoe ")
    'lake tahoe'
    """
    return " ".join(name.split()).lower()


def _stopwords() -> frozenset[str]:
    found: frozenset[str] | None = getattr(_local, "stopwords", None)
    if found is None:
        import yake

        found = _local.stopwords = frozenset(yake.KeywordExtractor(lan="en").stopword_set)
    return found


def _speaker(text: str) -> str | None:
    """The name of a leading ``"<Name>:"`` label (one or two capitalised words), or None."""
    head, colon, _ = text.partition(":")
    words = head.split()
    if not colon or not 1 <= len(words) <= 2:
        return None
    if all(w[:1].isupper() and w.isalpha() for w in words) and words[0].lower() not in _stopwords():
        return " ".join(words)
    return None


def extract_entities(text: str, *, phrases: int = 3) -> tuple[str, ...]:
    """The entity keys of ``text``: speaker, names, then the best ``phrases`` key phrases (see
    the module docstring), each once, in that order."""
    if not text or not text.strip():
        return ()
    from yake.data import DataCore

    flat = " ".join(text.split())
    keys: dict[str, None] = {}
    speaker = _speaker(flat)
    if speaker is not None:
        keys[entity_key(speaker)] = None
    try:
        core = DataCore(text=flat, stopword_set=_stopwords(), config={"windows_size": 1, "n": _MAX_WORDS})
        core.build_single_terms_features(features=None)
        core.build_mult_terms_features(features=None)
    except (ValueError, ZeroDivisionError, IndexError):  # text YAKE cannot tokenise (no words)
        return tuple(keys)
    ranked = sorted((c for c in core.candidates.values() if c.is_valid()), key=lambda c: c.h)
    names: list[str] = []
    others: list[str] = []
    for cand in ranked:
        key = entity_key(cand.unique_kw)
        if not key or len(key) > MAX_ENTITY_CHARS or key in keys:
            continue
        if any(tag and set(tag) <= _NAME_TAGS for tag in cand.tags):
            names.append(key)
        elif len(others) < 2 * phrases:
            others.append(key)
    # a name inside a longer one of the text ("tahoe" in "lake tahoe") and a phrase around a
    # name ("lake tahoe yesterday") add no entity of their own
    spaced = [f" {n} " for n in (*keys, *names)]  # the speaker too: "lee" of "Ann Lee:" is no name
    for key in names:
        if not any(f" {key} " in other and other != f" {key} " for other in spaced):
            keys.setdefault(key, None)
    kept: list[str] = []  # a phrase inside or around a name or a kept phrase ("support" of "support group")
    for key in others:
        padded = f" {key} "
        if len(kept) < phrases and not any(padded in k or k in padded for k in (*spaced, *kept)):
            kept.append(padded)
            keys.setdefault(key, None)
    return tuple(keys)


_PROMPT = ("List the named entities (people, places, organisations, events, works) and the key topics "
           "of this text, one per line, nothing else.\n\nText: ")


def llm_entities(llm: Any, text: str, *, phrases: int = 3,
                 fallback: Callable[..., Sequence[str]] = extract_entities) -> tuple[str, ...]:
    """The entity keys a model lists for ``text`` (one per line; bullets and numbering
    stripped; at most 32), or `extract_entities` when the call fails or yields none."""
    try:
        answer = call_llm(llm, _PROMPT + text)
    except Exception:
        logger.exception("entity extraction by the LLM failed; using key phrases")
        return tuple(fallback(text, phrases=phrases))
    keys: dict[str, None] = {}
    for line in answer.splitlines():
        key = entity_key(line.strip().lstrip("-*•0123456789.) ").strip())
        if key and len(key) <= MAX_ENTITY_CHARS:
            keys[key] = None
        if len(keys) == 32:
            break
    return tuple(keys) if keys else tuple(fallback(text, phrases=phrases))


def entity_keys(texts: Sequence[str], cfg: AtlasConfig, *, llm: Any = None) -> list[tuple[str, ...]] | None:
    """The entity keys of each text for the entity layer (`shared_core.text.entities`), or None
    when ``cfg.entity_extraction`` is ``"off"``: key phrases and names by YAKE, or the ``llm``'s
    list with ``"llm"`` (YAKE when there is no llm or it fails)."""
    mode = cfg.entity_extraction
    if mode == "off":
        return None
    phrases = cfg.entity_phrases
    if mode == "llm" and llm is not None:
        return [llm_entities(llm, text, phrases=phrases) for text in texts]
    return [extract_entities(text, phrases=phrases) for text in texts]
