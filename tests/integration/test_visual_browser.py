"""The graph page, opened in headless Chromium (Debian's package, installed by `make test`), draws its nodes."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from shared_core import ElasticMemoryAtlas, HashingEmbedder, ManualClock

pytestmark = pytest.mark.integration

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--virtual-time-budget=15000"]


@pytest.fixture(scope="module")
def chromium() -> str:
    if CHROMIUM is None:
        if os.environ.get("CI"):
            pytest.fail("chromium is missing: `make test` installs Debian's chromium package")
        pytest.skip("chromium is not installed (run `make browser`)")
    return CHROMIUM


def test_the_page_draws_every_node_in_a_real_browser(chromium: str, tmp_path: Path) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=ManualClock())
    atlas.add_memories([f"memory number {i} about topic {i % 4}" for i in range(24)], namespace="u", session_id="a")
    atlas.add_memories(["a summary of the topics", "another session's note"], namespace="u", session_id="b")
    page = tmp_path / "atlas.html"
    atlas.to_html(page, namespace="u")
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body is not None and 'data-drawn="26"' in body.group(0), body
    assert "vis-network" in dom.stdout  # the network's canvas was created
    with tempfile.TemporaryDirectory() as profile:
        shot = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--window-size=1000,700",
                               f"--screenshot={tmp_path / 'atlas.png'}", page.as_uri()],
                              capture_output=True, text=True, timeout=120)
    assert shot.returncode == 0 and (tmp_path / "atlas.png").stat().st_size > 5_000
