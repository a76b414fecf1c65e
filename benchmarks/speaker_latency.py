"""What the speaker path costs a recall, with the real model: `retrieve` and `build_context` on
LoCoMo questions that name a speaker and on questions that name nobody.

One LoCoMo conversation (default conv-26: its first ``--questions`` questions that name a speaker,
and the nine that name nobody) is stored (its turns' vectors embedded once and kept in ``--vectors``, so
a run embeds only the questions); then, for ``--rounds`` rounds, every question is asked of two
atlases over the same memories, interleaved: `AtlasConfig.archive()` (the speaker path on) and
the same with ``speaker_weight=0`` (the floor: no speaker path). The embedder is
`MiniLMEmbedder(cache_size=0)`, so each call runs the model, as a question asked once does.
Printed per atlas and kind of question: p50 and p95 wall milliseconds per call, and the process
CPU milliseconds per call (the model's threads included).

``--against DIR`` compares two versions of the library, A/B interleaved: the script runs itself
``--pairs`` times with ``PYTHONPATH`` set to ``DIR`` (e.g. an unpacked ``git archive main``) and
to this repository, alternately, and prints each version's medians over its runs::

    d=$(mktemp -d) && git archive main | tar -x -C $d
    nice -n 5 .venv/bin/python benchmarks/speaker_latency.py --against $d --pairs 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _locomo import default_data_path, load_locomo

import shared_core
from shared_core import AtlasConfig, ElasticMemoryAtlas, ManualClock, MiniLMEmbedder, TiktokenCounter
from shared_core.formulas.subqueries import name_words

NOW = 1_767_225_600.0
ROOT = Path(__file__).resolve().parents[1]


def _vectors(path: Path, texts: list[str]) -> np.ndarray[Any, Any]:
    if path.exists():
        kept = np.load(path)
        if kept.shape[0] == len(texts):
            return kept
    vectors = MiniLMEmbedder(cache_size=0).embed(texts)
    np.save(path, vectors)
    return vectors


def run(args: argparse.Namespace) -> dict[str, Any]:
    """One process's measurements: {atlas: {kind: {"p50", "p95", "cpu"}}}."""
    conv = load_locomo(args.data, conversations=[args.conversation])[0]
    turns = [t.content for t in conv.turns]
    vectors = _vectors(Path(args.vectors), turns)
    embedder, counter = MiniLMEmbedder(cache_size=0), TiktokenCounter()
    atlases = {name: ElasticMemoryAtlas(config=AtlasConfig.archive(speaker_weight=weight), embedder=embedder,
                                        token_counter=counter, clock=ManualClock(NOW))
               for name, weight in (("speaker path on", 1.0), ("speaker path off", 0.0))}
    for atlas in atlases.values():
        atlas.add_memories([{"content": t.content, "session_id": f"session_{t.session}", "timestamp": t.timestamp,
                             "metadata": {"speaker": t.speaker}, "embedding": v}
                            for t, v in zip(conv.turns, vectors, strict=True)], namespace="c", progress=False)
    speakers = {t.speaker for t in conv.turns}
    kinds = {q.question: "names a speaker" if set(name_words(q.question)) & speakers else "names nobody"
             for q in conv.questions}
    named = [q for q, kind in kinds.items() if kind == "names a speaker"]
    questions = named[:args.questions] + [q for q, kind in kinds.items() if kind == "names nobody"]
    embedder.embed(["warm up"])
    for atlas in atlases.values():  # warm up (and, where the atlas learns speakers, learn them)
        atlas.retrieve(questions[0], namespace="c", top_k=args.top_k, reinforce=False)
    wall: dict[tuple[str, str, str], list[float]] = {}
    cpu: dict[tuple[str, str, str], list[float]] = {}
    for _ in range(args.rounds):
        for q in questions:
            for name, atlas in atlases.items():
                for op in ("retrieve", "build_context"):
                    w0, c0 = time.perf_counter(), time.process_time()
                    if op == "retrieve":
                        atlas.retrieve(q, namespace="c", top_k=args.top_k, reinforce=False)
                    else:
                        atlas.build_context(q, namespace="c", token_budget=args.budget, reinforce=False)
                    key = (op, name, kinds[q])
                    wall.setdefault(key, []).append(1000 * (time.perf_counter() - w0))
                    cpu.setdefault(key, []).append(1000 * (time.process_time() - c0))
    out: dict[str, Any] = {}
    for key, times in wall.items():
        out[" | ".join(key)] = {"p50": statistics.median(times), "p95": float(np.percentile(times, 95)),
                                "cpu": statistics.median(cpu[key]), "n": len(times)}
    return out


def _table(rows: dict[str, list[dict[str, Any]]]) -> str:
    lines = ["| version | call | atlas | question | p50 ms (each run) | p95 ms | CPU ms | runs |",
             "|---|---|---|---|---:|---:|---:|---:|"]
    for version, runs in rows.items():
        for key in sorted(runs[0]):
            p50 = statistics.median(r[key]["p50"] for r in runs)
            p95 = statistics.median(r[key]["p95"] for r in runs)
            cpu = statistics.median(r[key]["cpu"] for r in runs)
            spread = "/".join(f"{r[key]['p50']:.1f}" for r in runs)
            op, name, kind = key.split(" | ")
            lines.append(f"| {version} | {op} | {name} | {kind} | {p50:.1f} ({spread}) | {p95:.1f} | {cpu:.1f} | "
                         f"{len(runs)} |")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(default_data_path()))
    parser.add_argument("--conversation", default="conv-26")
    parser.add_argument("--questions", type=int, default=40, help="questions that name a speaker (the "
                        "conversation's first ones; every question that names nobody is asked too)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument("--budget", type=int, default=2000)
    parser.add_argument("--vectors", default=os.path.join(os.environ.get("TMPDIR", "/tmp"),
                                                          "speaker_latency_vectors.npy"))
    parser.add_argument("--against", help="a directory holding another version's shared_core, for A/B")
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print one run's measurements as JSON")
    args = parser.parse_args()
    if args.against is None:
        result = run(args)
        print(json.dumps(result) if args.json else _table({shared_core.__file__: [result]}))
        return 0
    child = [sys.executable, __file__, "--json", "--data", args.data, "--conversation", args.conversation,
             "--questions", str(args.questions), "--rounds", str(args.rounds), "--top-k", str(args.top_k),
             "--budget", str(args.budget), "--vectors", args.vectors]
    rows: dict[str, list[dict[str, Any]]] = {"A (--against)": [], "B (this tree)": []}
    for _ in range(args.pairs):
        for version, path in (("A (--against)", args.against), ("B (this tree)", str(ROOT))):
            env = {**os.environ, "PYTHONPATH": path}
            done = subprocess.run(child, env=env, check=True, capture_output=True, text=True, cwd=path)
            rows[version].append(json.loads(done.stdout.strip().splitlines()[-1]))
            print(f"{version}: one run done", file=sys.stderr)
    print(_table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
