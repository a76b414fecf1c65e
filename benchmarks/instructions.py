"""Instructions per memory of a bulk write, counted by valgrind's callgrind: the atlas's
``add_memories`` against LangChain ``InMemoryVectorStore.add_texts``, on ``latency.py``'s
corpus and lookup embedders.

    .venv/bin/python benchmarks/instructions.py --sizes 1000
    .venv/bin/python benchmarks/instructions.py --sizes 1000 --tree /tmp/other --peers ""   # A/B a tree

CPU time on this machine's shared vCPUs moves by 10-30% from run to run, which hides a change
of a few percent; an instruction count repeats within 0.02% (it does not see cache misses
or SIMD width, so it complements ``cpu_ops.py`` rather than replacing it). Each figure is the
difference of two child runs, one build and ``1 + reps`` builds, so imports and the corpus are
not counted: ``(I(1 + reps) - I(1)) / (reps * n)``. ``--tree`` counts another checkout's
``shared_core`` (put first on ``PYTHONPATH``), e.g. a compiled one.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def child(kind: str, n: int, builds: int) -> None:
    """Build ``builds`` stores of ``n`` memories as ``latency.py`` does (`latency.build_atlas`)."""
    import latency

    corpus, _ = latency.make_corpus(n, 50, extra=10)
    if kind == "langchain":
        for _ in range(builds):
            build, _query = latency._langchain(corpus)
            build()
        return
    for _ in range(builds):
        latency.build_atlas(corpus)


def count(kind: str, n: int, builds: int, tree: str | None) -> int:
    """Instructions of one child run under callgrind."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if tree:
        env["PYTHONPATH"] = os.pathsep.join([tree, env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    cmd = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, __file__,
           "--child", kind, "--sizes", str(n), "--reps", str(builds)]
    run = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    found = COLLECTED.search(run.stderr)
    if run.returncode or not found:
        raise SystemExit(f"callgrind run failed ({' '.join(cmd)}):\n{run.stderr[-2000:]}")
    return int(found.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1000", help="comma-separated atlas sizes")
    parser.add_argument("--reps", type=int, default=3, help="extra builds counted (default 3)")
    parser.add_argument("--tree", help="count this checkout's shared_core instead of the installed one")
    parser.add_argument("--peers", default="langchain", help="'langchain' or '' (the atlas alone)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, int(args.sizes), args.reps)
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (Debian: apt-get install valgrind)")
    kinds = ["atlas", *(p for p in args.peers.split(",") if p)]
    names = {"atlas": f"atlas ({args.tree})" if args.tree else "atlas", "langchain": "LangChain InMemoryVectorStore"}
    if set(kinds) - set(names):
        parser.error(f"--peers: only 'langchain' is counted, not {sorted(set(kinds) - set(names))}")
    print("| memories | store | instructions a memory | × InMemoryVectorStore |")
    print("|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        per = {k: (count(k, n, 1 + args.reps, args.tree) - count(k, n, 1, args.tree)) / (args.reps * n)
               for k in kinds}
        for k, v in per.items():
            ratio = f"{v / per['langchain']:.2f}×" if "langchain" in per else "—"
            print(f"| {n:,} | {names[k]} | {v:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
