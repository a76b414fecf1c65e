"""A reduced LoCoMo benchmark: the atlas must beat hybrid RRF, measured in the same run.

One conversation (conv-30: 369 turns, 81 questions), the real MiniLM model, the timeline style at
1,000 and 2,000 tokens. The data file lives outside the repository (``../shared/data/locomo``);
without it the test is skipped, saying so.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from _locomo import default_data_path, load_locomo  # noqa: E402
from locomo_recall import run_benchmark  # noqa: E402

pytestmark = pytest.mark.integration
DATA = default_data_path()


@pytest.mark.skipif(not DATA.exists(), reason=f"LoCoMo data not found at {DATA} (see the benchmark README)")
def test_atlas_recall_is_clearly_above_hybrid_rrf() -> None:
    conversations = load_locomo(DATA, conversations=["conv-30"])
    results = run_benchmark(conversations, styles=("timeline",), budgets=(1000, 2000),
                            baselines=("hybrid",), progress=False)
    assert results.questions == 81

    def mean(method: str, metric: str) -> float:
        value = results.mean(method, metric)
        assert value is not None
        return value

    for budget in (1000, 2000):
        atlas = mean("atlas:timeline", f"R@{budget}tok")
        hybrid = mean("hybrid", f"R@{budget}tok")
        assert atlas >= hybrid + 0.05, (budget, atlas, hybrid)
    assert mean("atlas", "R@5") >= mean("hybrid", "R@5") + 0.05
    assert mean("atlas:timeline", "R@2000tok") >= 0.85
