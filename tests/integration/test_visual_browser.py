"""The graph page, opened in headless Chromium, draws its nodes.

Chromium is Debian's package: `make browser` installs it (root and apt-get), and CI's `make test`
does so itself. Without it the test is skipped with that advice, except under ``CI=true``, where
a missing browser is a failure.
"""

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
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("chromium is missing under CI=true: `make test` installs Debian's chromium package "
                        "there (`make browser`)")
        pytest.skip("the browser test needs chromium: run `make browser` (installs Debian's chromium with "
                    "apt-get, as root) or put a chromium on PATH, then `make test` again")
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


def test_the_notebook_output_unpacks_its_library_and_draws(chromium: str, tmp_path: Path) -> None:
    from html import unescape

    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=64), clock=ManualClock())
    old = atlas.add_memory("User prefers oat milk", namespace="u")
    atlas.update_memory(old.id, "User now prefers soy milk", namespace="u")
    atlas.add_memory("Alice lives in Oslo", namespace="u")
    srcdoc = re.search(r'srcdoc="(.*?)" style=', atlas._repr_html_(), re.S)
    assert srcdoc is not None
    page = tmp_path / "notebook_output.html"
    page.write_text(unescape(srcdoc.group(1)), encoding="utf-8")
    with tempfile.TemporaryDirectory() as profile:
        dom = subprocess.run([chromium, *FLAGS, f"--user-data-dir={profile}", "--dump-dom", page.as_uri()],
                             capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    body = re.search(r"<body[^>]*>", dom.stdout)
    assert body is not None and 'data-drawn="3"' in body.group(0), body
