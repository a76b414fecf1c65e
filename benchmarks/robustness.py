"""Recall's robustness to how real chats differ from LoCoMo's generated ones (issue 24).

    nice -n 5 python benchmarks/robustness.py --conversations conv-26,conv-30
    python benchmarks/robustness.py --perturbations none,lower_questions --set speaker_weight=0

The same questions, with the same evidence ids, asked of deterministic perturbations of the
development split, each scored as ``locomo_recall.py`` scores it (``AtlasConfig.archive()``,
timeline style) against the hybrid BM25 + MiniLM baseline (RRF) in the same run:

- ``none``: the split as it is;
- ``lower_questions``: questions typed in lower case ("what are kate's hobbies");
- ``no_labels``: turns stored without the ``"Name: "`` label, the speaker only in the
  metadata, as a chat application stores messages (the baseline's lines lose it too);
- ``full_names``: speakers stored under a full name ("Caroline Reyes"), questions asking by the
  first name as before;
- ``nicknames``: questions name speakers by a short form of their name ("Mel" for Melanie);
- ``lower_turns``: turns lower-cased and without punctuation (label included);
- ``no_captions``: shared photos without their captions;
- ``chat``: ``no_labels``, ``lower_turns``, ``no_captions`` and ``lower_questions`` together.

The shape of real chat traffic (``_perturb.py``; seeded, the same on every run):

- ``split_turns``: each turn sent as 1 to 3 consecutive messages of its speaker, cut at sentence
  boundaries, same session and time, every part keeping the turn's ``dia_id``;
- ``fillers``: a backchannel message ("ok", "lol", "haha nice", "👍", ...) after about 30% of the
  turns, mostly by the other speaker; never evidence;
- ``long``: the haystack 1.6 times as long: runs of 2 to 10 turns of the next dev conversation
  in the file, its speakers renamed to this one's, inserted inside this one's sessions and dated
  as they are; never evidence (the dev conversations' 552 turns on average become 883, about
  a real three-week chat's);
- ``real_chat``: ``chat`` with ``split_turns``, ``fillers`` and ``long`` together.

Every question is kept with its evidence ids. The perturbations above ``split_turns`` keep every
turn as one memory; the others add memories that are never evidence, or cut a turn into parts:
an evidence turn counts as found (in the top k, or in the context) when any of its parts is,
for the atlas and the baseline alike. Only ``conversation`` and ``qa`` are read.
"""

from __future__ import annotations

import argparse
import functools
import re
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import Conversation, Question, config_overrides, default_data_path, load_locomo
from _perturb import donor_of, fillers, long, split_turns
from locomo_recall import Results, run_benchmark

from shared_core import AtlasConfig, MiniLMEmbedder

#: surnames given to the speakers by ``full_names`` (by the speaker's position in the sorted names)
SURNAMES = ("Reyes", "Okafor", "Lindqvist", "Moreau", "Tanaka", "Novak")
#: the short names ``nicknames`` gives (a speaker not listed: the first three letters of the name)
NICKNAMES = {"Caroline": "Caro", "Melanie": "Mel", "Joanna": "Jo", "Maria": "Mari", "Jonathan": "Jon",
             "Nathan": "Nate", "Timothy": "Tim", "Gina": "Gigi", "John": "Johnny", "Nate": "Nat", "Tim": "Timmy",
             "Jon": "Jonny"}
_PUNCT = re.compile(r"[^\w\s']")


@dataclass(frozen=True, slots=True)
class ChatTurn:
    """A LoCoMo turn as a chat application might store it (duck-typed like ``_locomo.Turn``):
    ``labelled`` False drops the ``"Name: "`` label from the text (the speaker stays in the
    metadata the benchmark writes; a turn with no words and no photo keeps it), ``lower``
    lower-cases it and drops punctuation."""

    dia_id: str
    session: int
    speaker: str
    text: str
    caption: str | None
    date_text: str
    timestamp: float
    labelled: bool = True
    lower: bool = False

    @property
    def content(self) -> str:
        shared = f" [shares {self.caption}]" if self.caption else ""
        body = f"{self.text}{shared}"
        if self.lower:
            body = " ".join(_PUNCT.sub(" ", body.lower()).split())
        if not body.strip():  # a turn with no words and no photo keeps its label
            return f"{self.speaker.lower() if self.lower else self.speaker}:"
        if not self.labelled:
            return body
        return f"{self.speaker.lower() if self.lower else self.speaker}: {body}"

    @property
    def dated(self) -> str:
        return f"{self.date_text}: {self.content}"


def _chat(conv: Conversation, **changes: object) -> Conversation:
    turns = tuple(ChatTurn(t.dia_id, t.session, t.speaker, t.text, t.caption, t.date_text, t.timestamp)
                  for t in conv.turns)
    return replace(conv, turns=tuple(replace(t, **changes) for t in turns))  # type: ignore[arg-type]


def _questions(conv: Conversation, edit: Callable[[str], str]) -> Conversation:
    return replace(conv, questions=tuple(Question(edit(q.question), q.category, q.evidence) for q in conv.questions))


def _rename(text: str, names: dict[str, str]) -> str:
    for old, new in names.items():
        text = re.sub(rf"\b{re.escape(old)}\b", new, text)
    return text


def lower_questions(conv: Conversation) -> Conversation:
    return _questions(conv, str.lower)


def no_labels(conv: Conversation) -> Conversation:
    return _chat(conv, labelled=False)


def full_names(conv: Conversation) -> Conversation:
    speakers = sorted({t.speaker for t in conv.turns})
    full = {s: f"{s} {SURNAMES[i % len(SURNAMES)]}" for i, s in enumerate(speakers)}
    chat = _chat(conv)
    return replace(chat, turns=tuple(replace(t, speaker=full[t.speaker]) for t in chat.turns))  # type: ignore[arg-type]


def nicknames(conv: Conversation) -> Conversation:
    short = {s: NICKNAMES.get(s, s[:3]) for s in {t.speaker for t in conv.turns}}
    return _questions(conv, lambda q: _rename(q, short))


def lower_turns(conv: Conversation) -> Conversation:
    return _chat(conv, lower=True)


def no_captions(conv: Conversation) -> Conversation:
    return _chat(conv, caption=None)


def chat(conv: Conversation) -> Conversation:
    return lower_questions(_chat(conv, labelled=False, lower=True, caption=None))


def real_chat(conv: Conversation, pool: Sequence[Conversation]) -> Conversation:
    return chat(fillers(split_turns(long(conv, donor_of(conv, pool)))))


def _alone(perturb: Callable[[Conversation], Conversation], conv: Conversation,
           pool: Sequence[Conversation]) -> Conversation:
    del pool
    return perturb(conv)


_ALONE: dict[str, Callable[[Conversation], Conversation]] = {
    "none": lambda c: c, "lower_questions": lower_questions, "no_labels": no_labels, "full_names": full_names,
    "nicknames": nicknames, "lower_turns": lower_turns, "no_captions": no_captions, "chat": chat,
    "split_turns": split_turns, "fillers": fillers,
}
#: name -> perturbation of a conversation, given the data file's conversations (``long``'s donors)
PERTURBATIONS: dict[str, Callable[[Conversation, Sequence[Conversation]], Conversation]] = {
    **{name: functools.partial(_alone, f) for name, f in _ALONE.items()},
    "long": lambda c, pool: long(c, donor_of(c, pool)), "real_chat": real_chat,
}
COLUMNS = (("R@10", "atlas", "R@10", None), ("R@1000 tok", "atlas:timeline", "R@1000tok", None),
           ("R@2000 tok", "atlas:timeline", "R@2000tok", None), ("multi-hop R@2000", "atlas:timeline", "R@2000tok", 1),
           ("hybrid R@2000", "hybrid", "R@2000tok", None), ("hybrid multi-hop", "hybrid", "R@2000tok", 1))


def table(rows: dict[str, Results]) -> str:
    """One row per perturbation: the atlas's and the baseline's recall, and the atlas's lead
    over the baseline at 2,000 tokens (all questions; multi-hop) against the unperturbed row's."""
    head = ["perturbation", *(c[0] for c in COLUMNS), "lead R@2000 (change)", "lead multi-hop (change)"]
    out = ["| " + " | ".join(head) + " |", "|---|" + "---:|" * (len(head) - 1)]
    first = next(iter(rows.values()))

    def lead(res: Results, category: int | None) -> float:
        return (res.mean("atlas:timeline", "R@2000tok", category) or 0.0) - (
            res.mean("hybrid", "R@2000tok", category) or 0.0)

    for name, res in rows.items():
        cells = [f"{res.mean(method, metric, cat) or 0.0:.3f}" for _, method, metric, cat in COLUMNS]
        for cat in (None, 1):
            cells.append(f"{lead(res, cat):+.3f} ({lead(res, cat) - lead(first, cat):+.3f})")
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(default_data_path()), help="locomo_dev.json (default: %(default)s)")
    parser.add_argument("--conversations", help="comma-separated sample ids, e.g. conv-26,conv-30")
    parser.add_argument("--perturbations", default=",".join(PERTURBATIONS),
                        help="comma-separated, from: " + ", ".join(PERTURBATIONS))
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="override an AtlasConfig.archive() field, e.g. --set speaker_weight=0")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    parser.add_argument("--backend", metavar="URL", help="the atlas on a FalkorDB server, e.g. "
                        "falkordb://127.0.0.1:6379?prefix=robust: (its namespaces under the prefix are dropped)")
    args = parser.parse_args(argv)
    if not Path(args.data).exists():
        parser.error(f"no data at {args.data}; see ../shared/data/locomo/README.md")
    names = [p for p in args.perturbations.split(",") if p]
    if unknown := set(names) - set(PERTURBATIONS):
        parser.error(f"unknown perturbation(s): {', '.join(sorted(unknown))}")
    overrides = config_overrides(args.set)
    config = AtlasConfig.archive(**overrides)
    pool = load_locomo(args.data)  # long's donors: the next conversation in the file
    wanted = args.conversations.split(",") if args.conversations else None
    conversations = load_locomo(args.data, conversations=wanted) if wanted else pool
    embedder = MiniLMEmbedder(cache_size=0)
    rows: dict[str, Results] = {}
    started = time.perf_counter()
    for name in names:
        perturbed = [PERTURBATIONS[name](c, pool) for c in conversations]
        rows[name] = run_benchmark(perturbed, config=config, styles=("timeline",), baselines=("hybrid",),
                                   progress=not args.quiet, embedder=embedder, backend=args.backend)
        if not args.quiet:
            print(f"{name}: done", file=sys.stderr)
    questions = next(iter(rows.values())).questions
    print(f"{len(conversations)} conversation(s), {questions} questions; atlas: AtlasConfig.archive("
          f"{', '.join(f'{k}={v!r}' for k, v in overrides.items())}), timeline style; baseline: hybrid BM25 + "
          "MiniLM (RRF). Lead: atlas R@2000 tok minus hybrid's (change: against the first row).\n")
    print(table(rows))
    print(f"\n(total run time {time.perf_counter() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
