"""`make demo` runs end to end with the real model and shows each part of the memory at work."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def test_demo_runs_and_shows_the_memory_at_work() -> None:
    out = subprocess.run([sys.executable, "-m", "shared_core.demo"], capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for expected in ("recalled:", "context for the LLM", "remembered: user turn", "(pinned)",
                     "supersedes", "[superseded]", "[current]", "Atlas statistics:", "weight histogram:",
                     "edges before", "Evicted under the cap"):
        assert expected in text, expected
    # a newcomer reads that the replies are scripted and why recalled and context lists differ
    assert "assistant (scripted) ›" in text and "no LLM runs here" in text
    assert "recalled: the top 3" in text and "context: what `build_context` hands the LLM" in text
    # the user's identity turn (pinned by the script) survives the capacity cap to the end
    evicted = text.split("Evicted under the cap")[1]
    assert "Hi! I'm Maya" not in evicted
    # the budget held at every step
    for line in text.splitlines():
        if "context for the LLM (" in line:
            used, budget = line.split("(")[1].split(" tokens")[0].split("/")
            assert int(used) <= int(budget)
