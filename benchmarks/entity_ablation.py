"""The entity layer's recall levers on LoCoMo dev, per conversation, with a leave-one-out choice.

    .venv/bin/python benchmarks/entity_ablation.py --out runs.json \\
        --variant base=entity_extraction=keyphrases \\
        --variant w0.25=entity_extraction=keyphrases,entity_weight=0.25 \\
        --variant walk0.5=entity_extraction=keyphrases,entity_walk=0.5
    .venv/bin/python benchmarks/entity_ablation.py --report runs.json

Each variant is `AtlasConfig.archive()` with its overrides, run by `locomo_recall.run_benchmark` on
each conversation alone (timeline style, no baselines), so the scores of every question are kept
by conversation. MiniLM vectors are cached in a file (``--cache``) and shared by the variants.
``--report`` prints each variant's means (R@5/10/20, R@1000/2000 tokens, multi-hop R@2000) and
two honest choices among the variants, the first listed being the baseline: leave one
conversation out (the variant with the best mean of R@1000 and R@2000 tokens on four
conversations scores the fifth, for each of the five), and choose on the first two
conversations, score on the other three.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

sys.path.insert(0, str(Path(__file__).resolve().parent))

import locomo_recall
from _locomo import config_overrides, default_data_path, load_locomo

from shared_core import AtlasConfig, MiniLMEmbedder

METRICS = ("R@5", "R@10", "R@20", "R@1000tok", "R@2000tok")
Scores = dict[str, dict[str, dict[str, list[list[float]]]]]  # variant -> conversation -> metric -> [cat, value]


class FileCachedEmbedder:
    """MiniLM vectors by text, kept in a pickle file between runs (only this script's own file)."""

    dim = 384

    def __init__(self, path: Path) -> None:
        self.path = path
        self.table: dict[str, npt.NDArray[np.float32]] = pickle.loads(path.read_bytes()) if path.exists() else {}
        self._model: MiniLMEmbedder | None = None

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        fresh = [t for t in dict.fromkeys(texts) if t not in self.table]
        if fresh:
            self._model = self._model or MiniLMEmbedder()
            self.table.update(zip(fresh, np.asarray(self._model.embed(fresh), dtype=np.float32), strict=True))
            self.path.write_bytes(pickle.dumps(self.table))
        return np.stack([self.table[t] for t in texts]) if texts else np.zeros((0, self.dim), np.float32)


def run(data: str, variants: dict[str, dict[str, Any]], cache: Path, out: Path) -> None:
    conversations = load_locomo(data)
    embedder = FileCachedEmbedder(cache)
    scores: Scores = json.loads(out.read_text()) if out.exists() else {}
    for name, overrides in variants.items():
        config = AtlasConfig.archive(**overrides)
        scores[name] = {}
        for conv in conversations:
            res = locomo_recall.run_benchmark([conv], config=config, styles=("timeline",), baselines=(),
                                              progress=False, embedder=embedder)
            scores[name][conv.sample_id] = {
                m: [list(x) for x in res.scores["atlas:timeline" if m.endswith("tok") else "atlas"][m]]
                for m in METRICS}
        out.write_text(json.dumps(scores))
        print(f"{name} done", flush=True)


def _values(scores: Scores, variant: str, convs: Sequence[str], metric: str, category: int | None = None
            ) -> list[float]:
    return [v for c in convs for cat, v in scores[variant][c][metric] if category in (None, cat)]


def _row(scores: Scores, variant: str, convs: Sequence[str]) -> str:
    cells = [np.mean(_values(scores, variant, convs, m)) for m in METRICS]
    cells.append(np.mean(_values(scores, variant, convs, "R@2000tok", 1)))
    return "| " + variant + " | " + " | ".join(f"{c:.3f}" for c in cells) + " |"


def report(scores: Scores) -> str:
    variants = list(scores)
    convs = list(scores[variants[0]])
    head = "| variant | R@5 | R@10 | R@20 | R@1000 tok | R@2000 tok | multi-hop R@2000 tok |\n|---|" + "---:|" * 6
    lines = ["All five conversations:", head, *(_row(scores, v, convs) for v in variants)]

    def criterion(v: str, cs: Sequence[str]) -> float:
        return float(np.mean(_values(scores, v, cs, "R@1000tok") + _values(scores, v, cs, "R@2000tok")))

    chosen = {held: max(variants, key=lambda v: (criterion(v, [c for c in convs if c != held]), v == variants[0]))
              for held in convs}
    cv = {m: [x for held, v in chosen.items() for x in _values(scores, v, [held], m)] for m in METRICS}
    multi = [x for held, v in chosen.items() for x in _values(scores, v, [held], "R@2000tok", 1)]
    lines += ["", f"Leave one conversation out (chosen: {chosen}):", head,
              "| cross-validated choice | " + " | ".join(f"{np.mean(cv[m]):.3f}" for m in METRICS)
              + f" | {np.mean(multi):.3f} |", _row(scores, variants[0], convs)]
    train, test = convs[:2], convs[2:]
    best = max(variants, key=lambda v: (criterion(v, train), v == variants[0]))
    lines += ["", f"Chosen on {', '.join(train)}: {best}; scored on {', '.join(test)}:", head,
              _row(scores, variants[0], test), *([_row(scores, best, test)] if best != variants[0] else [])]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", default=str(default_data_path()))
    parser.add_argument("--variant", action="append", default=[], metavar="NAME=FIELD=VALUE[,FIELD=VALUE]",
                        help="a variant: its name and AtlasConfig overrides (none: the archive preset)")
    parser.add_argument("--out", type=Path, default=Path("entity_ablation.json"))
    parser.add_argument("--cache", type=Path, default=Path("entity_ablation_vectors.pkl"))
    parser.add_argument("--report", type=Path, nargs="+", metavar="RUNS.json")
    args = parser.parse_args(argv)
    if args.report:
        merged: Scores = {}
        for path in args.report:
            merged.update(json.loads(path.read_text()))
        print(report(merged))
        return
    variants: dict[str, dict[str, Any]] = {}
    for item in args.variant:
        name, _, rest = item.partition("=")
        variants[name] = config_overrides(filter(None, rest.split(",")))
    run(args.data, variants, args.cache, args.out)


if __name__ == "__main__":
    main()
