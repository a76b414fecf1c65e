"""The shape of real chat traffic, as deterministic perturbations of a LoCoMo conversation
(``robustness.py``'s ``split_turns``, ``fillers``, ``long`` and ``real_chat``).

Each function takes a `_locomo.Conversation` (its turns a ``_locomo.Turn`` or
``robustness.ChatTurn``: new turns are made with `dataclasses.replace` of a neighbour, so they
keep its type and its rendering flags) and returns a new one whose questions are unchanged:

- `split_turns`: each turn of several sentences sent as 1 to 3 consecutive messages of its
  speaker, cut at sentence boundaries (``.``, ``!`` or ``?`` then a space), in the same session
  at the same time; every part keeps the turn's ``dia_id`` (a shared photo's caption goes on
  the last part). An evidence turn counts as found when any of its parts is found.
- `fillers`: after about ``rate`` of the turns, a short backchannel message ("ok", "lol",
  "haha nice", ...), by the other speaker three times in four, in the same session at the same
  time; its ``dia_id`` is empty, so it is never evidence.
- `long`: the turns of another conversation (``donor``), its speakers renamed to this
  conversation's (in the label and wherever the text names them), cut into runs of 2 to 10
  consecutive turns and inserted between this conversation's turns, inside its sessions and
  dated as they are, until the conversation is ``factor`` times as long; never evidence (empty
  ``dia_id``). The dev conversations' 552 turns on average become 883, about a real three-week chat's.

Randomness comes from ``random.Random(f"{seed}:{name}:{sample_id}")``: the same arguments give
the same conversation on every run and machine.

>>> from _locomo import Conversation, Question, Turn
>>> t = Turn("D1:1", 1, "Ann", "Hi! Went swimming. Fun.", None, "", 0.0)
>>> c = Conversation("c", (t,), (Question("q", 1, frozenset({"D1:1"})),), 0)
>>> {u.dia_id for u in split_turns(c).turns}, "".join(u.text for u in split_turns(c).turns).replace(" ", "")
({'D1:1'}, 'Hi!Wentswimming.Fun.')
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from _locomo import Conversation

__all__ = ["FILLERS", "donor_of", "fillers", "long", "split_turns"]

#: backchannel messages `fillers` inserts (none carries a fact)
FILLERS = ("ok", "lol", "haha nice", "yeah", "wait what", "👍", "sure", "omg", "nice!", "haha",
           "true", "ikr", "hmm", "oh wow", "yep", "ok cool")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


def _rng(seed: int, name: str, conv: Conversation) -> random.Random:
    return random.Random(f"{seed}:{name}:{conv.sample_id}")


def _parts(text: str, rng: random.Random, most: int) -> list[str]:
    """``text`` cut at sentence boundaries into 1 to ``most`` parts (as many as it has sentences
    at most), each a run of consecutive sentences."""
    sentences = _SENTENCE_END.split(text.strip())
    k = rng.randint(1, min(most, len(sentences)))
    if k == 1:
        return [text]
    cuts = sorted(rng.sample(range(1, len(sentences)), k - 1))
    return [" ".join(sentences[a:b]) for a, b in zip([0, *cuts], [*cuts, len(sentences)], strict=True)]


def split_turns(conv: Conversation, *, seed: int = 0, most: int = 3) -> Conversation:
    """Each turn as 1 to ``most`` consecutive messages of its speaker, each keeping its ``dia_id``."""
    rng = _rng(seed, "split_turns", conv)
    turns: list[Any] = []
    for t in conv.turns:
        parts = _parts(t.text, rng, most)
        for j, part in enumerate(parts):
            turns.append(replace(t, text=part, caption=t.caption if j == len(parts) - 1 else None))
    return replace(conv, turns=tuple(turns))


def fillers(conv: Conversation, *, seed: int = 0, rate: float = 0.3) -> Conversation:
    """A backchannel message after about ``rate`` of the turns (empty ``dia_id``: never evidence)."""
    rng = _rng(seed, "fillers", conv)
    speakers = sorted({t.speaker for t in conv.turns})
    turns: list[Any] = []
    for t in conv.turns:
        turns.append(t)
        if rng.random() < rate:
            others = [s for s in speakers if s != t.speaker] or [t.speaker]
            who = rng.choice(others) if rng.random() < 0.75 else t.speaker
            turns.append(replace(t, dia_id="", speaker=who, text=rng.choice(FILLERS), caption=None))
    return replace(conv, turns=tuple(turns))


def _renamed(text: str, names: dict[str, str]) -> str:
    if not names:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b")
    return pattern.sub(lambda m: names[m.group(1)], text)


def long(conv: Conversation, donor: Conversation, *, seed: int = 0, factor: float = 1.6) -> Conversation:
    """``conv`` with ``donor``'s turns (speakers renamed to ``conv``'s, never evidence) inserted
    in runs of 2 to 10 between its turns, inside its sessions, until it is ``factor`` times as long."""
    if donor.sample_id == conv.sample_id:
        raise ValueError("long() needs another conversation as its donor")
    rng = _rng(seed, "long", conv)
    mine = sorted({t.speaker for t in conv.turns})
    theirs = sorted({t.speaker for t in donor.turns})
    names = {s: mine[i % len(mine)] for i, s in enumerate(theirs) if s not in mine}
    extra = round(len(conv.turns) * (factor - 1.0))
    source = [donor.turns[i % len(donor.turns)] for i in range(extra)]
    runs: list[list[Any]] = []
    while source:
        size = rng.randint(2, 10)
        runs.append(source[:size])
        source = source[size:]
    # each run goes after one of conv's turns (several runs may share one, in donor order)
    slots = sorted(rng.randrange(len(conv.turns)) for _ in runs)
    after: dict[int, list[list[Any]]] = {}
    for slot, run in zip(slots, runs, strict=True):
        after.setdefault(slot, []).append(run)
    turns: list[Any] = []
    for i, t in enumerate(conv.turns):
        turns.append(t)
        for run in after.get(i, ()):
            turns.extend(replace(t, dia_id="", speaker=names.get(d.speaker, d.speaker),
                                 text=_renamed(d.text, names),
                                 caption=_renamed(d.caption, names) if d.caption else None) for d in run)
    return replace(conv, turns=tuple(turns))


def donor_of(conv: Conversation, pool: Sequence[Conversation]) -> Conversation:
    """The conversation after ``conv`` in ``pool`` (cyclically) that is not ``conv``."""
    others = [c for c in pool if c.sample_id != conv.sample_id]
    if not others:
        raise ValueError("long needs a second conversation in the data file")
    ids = [c.sample_id for c in pool]
    start = ids.index(conv.sample_id) + 1 if conv.sample_id in ids else 0
    return next(c for c in [*pool[start:], *pool[:start]] if c.sample_id != conv.sample_id)
