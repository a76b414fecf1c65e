"""Which graph (walk) weight and hop decay does each kind of question want, on each set?

The fusion grid (``locomo_recall.py --cv --grid fusion``) found the walk's weight pulled apart:
up on LoCoMo cut into sentences (``--split-messages``), down for LoCoMo's list questions and
on the longer haystacks. This script asks whether a feature the atlas can read from the question
separates the questions that want more walk from those that want less. For every set it
ingests each conversation once (`_cv.run_grid`: a grid point is a new atlas over the same
backend), scores every question at every point of `POINTS` (or of ``--point``), and prints, per
question group, the mean objective of `_cv.OBJECTIVE` (R@1000 tok and R@2000 tok) at each point
(``--metric`` adds a table of one metric), then the leave-one-conversation-out table of
`cv_report`: each fold chooses one point per group on the other conversations (`by_group_cv`),
against one point for every question (the by-group choice's ablation) and the presets.

Groups: the shape `shared_core.formulas.questions.analyze_query` reads (``single``, ``list``,
``count``; ``aggregate`` = list or count), whether the question names a time
(`shared_core.formulas.timecues.parse_time_cue`), whether it names a speaker of its
conversation (`shared_core.formulas.subqueries.speaker_words`), and LoCoMo's category (which
the atlas cannot see: for reading only).

Sets: ``dev`` (the split as it is), ``split`` (`_locomo.split_messages`: one message per
sentence), and the ``robustness.py`` perturbations ``real_chat`` and ``long``.

    nice -n 19 python benchmarks/graph_kind_diagnosis.py --sets dev,split --json /tmp/kinds.json
    python benchmarks/graph_kind_diagnosis.py --load /tmp/kinds.json --metric R@2000tok    # the tables again
    nice -n 19 python benchmarks/graph_kind_diagnosis.py --sets dev --point keyword_weight=0.35 --point feedback_docs=10
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _baselines import VectorCache
from _cv import OBJECTIVE, run_grid
from _locomo import CATEGORIES, Conversation, config_overrides, default_data_path, load_locomo, split_messages
from locomo_recall import NOW, embed_all
from robustness import PERTURBATIONS

from shared_core import AtlasConfig, MiniLMEmbedder
from shared_core.formulas.questions import analyze_query
from shared_core.formulas.subqueries import speaker_words
from shared_core.formulas.timecues import parse_time_cue

#: the points scored (`AtlasConfig.archive` fields changed), the presets first; ``--point`` replaces them
POINTS: tuple[dict[str, Any], ...] = (
    {}, {"graph_weight": 0.5}, {"graph_weight": 0.7}, {"graph_weight": 1.4}, {"graph_weight": 2.0},
    {"graph_hop_decay": 0.3}, {"graph_hop_decay": 0.6},
)
SETS: dict[str, Callable[[Conversation, Sequence[Conversation]], Conversation]] = {
    "dev": lambda c, pool: c,
    "split": lambda c, pool: split_messages(c),
    "real_chat": PERTURBATIONS["real_chat"],
    "long": PERTURBATIONS["long"],
}


def features(conv: Conversation, question: str) -> dict[str, str]:
    """The groups one question falls in (see the module)."""
    shape = analyze_query(question)
    speakers = {t.speaker for t in conv.turns}
    return {"kind": shape.kind, "aggregate": "aggregate" if shape.aggregate else "single",
            "time cue": "yes" if parse_time_cue(question, now=NOW) is not None else "no",
            "names a speaker": "yes" if speaker_words(question, speakers) else "no"}


def run_set(name: str, conversations: Sequence[Conversation], pool: Sequence[Conversation],
            cache: VectorCache, embedder: Any, points: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every question of the set, with its groups and its metrics at every point."""
    convs = [SETS[name](c, pool) for c in conversations]
    embed_all(convs, cache, progress=False)
    base = AtlasConfig.archive()
    names = sorted({f for p in points for f in p})
    grid = tuple((f, tuple(dict.fromkeys([getattr(base, f), *(p[f] for p in points if f in p)]))) for f in names)
    scores = run_grid(convs, base=base, cache=cache, embedder=embedder, now=NOW, grid=grid,
                      points=[{f: p.get(f, getattr(base, f)) for f in names} for p in points])
    out: list[dict[str, Any]] = []
    for conv in convs:
        for qi, q in enumerate(conv.questions):
            metrics = [scores.atlas[p][conv.sample_id][qi][1] for p in range(len(points))]
            out.append({"conv": conv.sample_id, "question": q.question, "category": CATEGORIES[q.category],
                        **features(conv, q.question), "metrics": metrics})
    return out


def _objective(row: dict[str, float]) -> float:
    return float(np.mean([row[m] for m in OBJECTIVE]))


def _label(point: dict[str, Any]) -> str:
    return ", ".join(f"{f}={v}" for f, v in point.items()) or "presets"


def report(name: str, rows: Sequence[dict[str, Any]], points: Sequence[dict[str, Any]],
           metric: str | None = None) -> str:
    """Per group: the questions, and at each point the mean of ``metric`` (None: the objective)."""
    what = f"mean of {' and '.join(OBJECTIVE)}" if metric is None else metric
    head = "| group | n | " + " | ".join(_label(p) for p in points) + " |"
    out = [f"### {name} ({len(rows)} questions): {what} per point", "", head, "|---|---:|" + "---:|" * len(points)]
    groups: list[tuple[str, list[dict[str, Any]]]] = [("all", list(rows))]
    for feature in ("kind", "aggregate", "time cue", "names a speaker", "category"):
        for value in sorted({r[feature] for r in rows}):
            groups.append((f"{feature}: {value}", [r for r in rows if r[feature] == value]))
    for label, members in groups:
        means = [np.mean([_objective(r["metrics"][p]) if metric is None else r["metrics"][p][metric]
                          for r in members]) for p in range(len(points))]
        best = int(np.argmax(means))
        cells = [f"**{m:.3f}**" if p == best else f"{m:.3f}" for p, m in enumerate(means)]
        out.append(f"| {label} | {len(members)} | " + " | ".join(cells) + " |")
    return "\n".join(out)


#: the features a point may be chosen by, one point per value (what the atlas can read from the question)
BY = ("aggregate", "kind", "time cue")
CV_METRICS = ("R@10", "R@1000tok", "R@2000tok")


def by_group_cv(rows: Sequence[dict[str, Any]], feature: str | None) -> tuple[list[dict[str, float]], list[str]]:
    """Leave one conversation out, a point per value of ``feature`` (None: one point for all):
    each held-out conversation's question is scored at the point with the best objective over
    the other conversations' questions of its group (ties: the earlier point, the presets first).
    Returns each question's held-out metrics, and the choices made ("conv/value: point index")."""
    convs = sorted({r["conv"] for r in rows})
    n_points = len(rows[0]["metrics"])
    out: list[dict[str, float]] = []
    chosen: list[str] = []
    for held in convs:
        for value in sorted({r[feature] for r in rows} if feature else {""}):
            train = [r for r in rows if r["conv"] != held and (not feature or r[feature] == value)]
            test = [r for r in rows if r["conv"] == held and (not feature or r[feature] == value)]
            if not test:
                continue
            scores = [np.mean([_objective(r["metrics"][p]) for r in train]) if train else 0.0
                      for p in range(n_points)]
            best = max(range(n_points), key=lambda p: (scores[p], -p))
            chosen.append(f"{held}/{value or 'all'}: {best}")
            out += [{**r["metrics"][best], "multi-hop": r["category"] == "multi-hop"} for r in test]
    return out, chosen


def cv_report(name: str, rows: Sequence[dict[str, Any]], points: Sequence[dict[str, Any]]) -> str:
    """The presets, one point chosen per fold, and a point chosen per fold for each value of each
    feature of `BY`; held-out means of `CV_METRICS` and multi-hop R@2000 tok."""
    out = [f"### {name}: leave one conversation out, a point per question group", "",
           "| chosen | R@10 | R@1000 tok | R@2000 tok | multi-hop R@2000 tok | points chosen (conv/group: index) |",
           "|---|---:|---:|---:|---:|---|"]

    def line(label: str, scored: Sequence[dict[str, Any]], chosen: Sequence[str]) -> str:
        cells = [np.mean([r[m] for r in scored]) for m in CV_METRICS]
        cells.append(np.mean([r["R@2000tok"] for r in scored if r["multi-hop"]]))
        return f"| {label} | " + " | ".join(f"{c:.3f}" for c in cells) + f" | {'; '.join(chosen)} |"

    presets = [{**r["metrics"][0], "multi-hop": r["category"] == "multi-hop"} for r in rows]
    out.append(line("presets", presets, []))
    for feature in (None, *BY):
        scored, chosen = by_group_cv(rows, feature)
        out.append(line("one point" if feature is None else f"a point per {feature}", scored, chosen))
    out.append("")
    out.append("Points: " + "; ".join(f"{i} = {_label(p)}" for i, p in enumerate(points)))
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(default_data_path()))
    parser.add_argument("--conversations", help="comma-separated sample ids")
    parser.add_argument("--sets", default=",".join(SETS), help="comma-separated, from: " + ", ".join(SETS))
    parser.add_argument("--point", action="append", default=[], metavar="FIELD=VALUE[,FIELD=VALUE]",
                        help="a point to score (repeat; the presets are always the first): replaces POINTS")
    parser.add_argument("--metric", action="append", default=[], help="also a table of this metric (R@10, "
                        "R@1000tok, R@2000tok, ...)")
    parser.add_argument("--json", metavar="FILE", help="also write every question's metrics per point")
    parser.add_argument("--load", metavar="FILE", action="append", default=[],
                        help="read the questions from a --json file instead of running; repeated, the files' "
                        "points side by side (the first file's first point is the presets), each file's "
                        "points tagged with its --tag")
    parser.add_argument("--tag", action="append", default=[], help="with --load: a name per file (run=NAME in "
                        "its points' labels), e.g. the patch a run was made under")
    parser.add_argument("--points", action="store_true", help="also a table of every point on every question "
                        "(fitted): R@10, R@1000 tok, R@2000 tok, multi-hop R@2000 tok")
    args = parser.parse_args(argv)
    points = [{}, *(config_overrides(p.split(",")) for p in args.point)] if args.point else list(POINTS)
    if args.load:
        data = merge([json.loads(Path(f).read_text()) for f in args.load], args.tag)
    else:
        pool = load_locomo(args.data)
        wanted = args.conversations.split(",") if args.conversations else None
        conversations = load_locomo(args.data, conversations=wanted) if wanted else pool
        embedder = MiniLMEmbedder(cache_size=0)
        cache = VectorCache(embedder)
        data = {}
        for name in [s for s in args.sets.split(",") if s]:
            started = time.perf_counter()
            data[name] = run_set(name, conversations, pool, cache, embedder, points)
            print(f"{name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
            if args.json:
                Path(args.json).write_text(json.dumps({"points": points, "sets": data}))
        data = {"points": points, "sets": data}
    for name, rows in data["sets"].items():
        for metric in (None, *args.metric):
            print(report(name, rows, data["points"], metric))
            print()
        if args.points:
            print(points_table(name, rows, data["points"]))
            print()
        print(cv_report(name, rows, data["points"]))
        print()
    return 0


def merge(files: Sequence[dict[str, Any]], tags: Sequence[str] = ()) -> dict[str, Any]:
    """The ``--json`` files' points side by side, on the sets they all hold (the same questions
    in the same order), each file's points tagged ``run=TAG`` when ``tags`` names it."""
    points: list[dict[str, Any]] = []
    sets: dict[str, list[dict[str, Any]]] = {}
    names = [n for n in files[0]["sets"] if all(n in f["sets"] for f in files)]
    for index, data in enumerate(files):
        tag = {"run": tags[index]} if index < len(tags) else {}
        points += [{**tag, **(p if isinstance(p, dict) else {"graph_weight": p[0], "graph_hop_decay": p[1]})}
                   for p in data["points"]]  # the first runs' (weight, decay) pairs
        for name in names:
            rows = data["sets"][name]
            if name not in sets:
                sets[name] = [dict(r, metrics=list(r["metrics"])) for r in rows]
                continue
            if [(r["conv"], r["question"]) for r in rows] != [(r["conv"], r["question"]) for r in sets[name]]:
                raise SystemExit(f"{name}: the files do not hold the same questions")
            for row, other in zip(sets[name], rows, strict=True):
                row["metrics"] += other["metrics"]
    return {"points": points, "sets": sets}


def points_table(name: str, rows: Sequence[dict[str, Any]], points: Sequence[dict[str, Any]]) -> str:
    """Every point's means over every question (fitted): R@10, R@1000 tok, R@2000 tok and
    multi-hop R@2000 tok."""
    out = [f"### {name}: every point (all questions, fitted)", "",
           "| point | R@10 | R@1000 tok | R@2000 tok | multi-hop R@2000 tok |", "|---|---:|---:|---:|---:|"]
    for p, point in enumerate(points):
        cells = [np.mean([r["metrics"][p][m] for r in rows]) for m in CV_METRICS]
        multi = [r["metrics"][p]["R@2000tok"] for r in rows if r["category"] == "multi-hop"]
        cells.append(np.mean(multi) if multi else float("nan"))
        out.append(f"| {_label(point)} | " + " | ".join(f"{c:.3f}" for c in cells) + " |")
    return "\n".join(out)


if __name__ == "__main__":
    raise SystemExit(main())
