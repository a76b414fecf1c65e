"""A newcomer's install, as the README gives it: build the wheel, install it (core, no extras) into a
fresh virtual environment in a temporary directory outside the repository, and use it from there.

It needs pip to reach a package index for the dependencies (CI does); where pip cannot, the test
is skipped and says so. One venv, the core only: a minute or two with pip's cache, a few without.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.install

ROOT = Path(__file__).resolve().parents[1]
# The aim for the core install (pip and setuptools included): 300 MB. faiss (66 MB) is the
# optional "ann" extra; the README gives the measured figure.
CORE_CEILING_MB = 300

SMOKE = textwrap.dedent("""
    import importlib.metadata as md, importlib.util, json, sys
    import shared_core
    from shared_core import ElasticMemoryAtlas
    atlas = ElasticMemoryAtlas()
    atlas.add_memories(["Alice prefers oat milk", "Alice's sister lives in Porto"], namespace="alice")
    hit = atlas.retrieve("what milk does she like?", namespace="alice", top_k=1)[0]
    ctx = atlas.build_context("milk", namespace="alice", token_budget=50)
    print(json.dumps({"file": shared_core.__file__, "hit": hit.node.content, "tokens": ctx.tokens,
                      "count": atlas.count_tokens("hello world"),
                      "bpe_openai": importlib.util.find_spec("bpe_openai") is not None,
                      "packages": sorted(d.metadata["Name"].lower() for d in md.distributions())}))
""")


def _run(args: list[str], *, cwd: Path, timeout: float) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def _site_packages_mb(venv: Path) -> int:
    """MB on disk, as the README's ``du -sm`` measures it."""
    (site,) = venv.glob("lib/python3*/site-packages")
    return int(subprocess.run(["du", "-sm", str(site)], capture_output=True, text=True, check=True).stdout.split()[0])


def test_the_wheel_installs_and_runs_in_a_fresh_venv_outside_the_repository(tmp_path: Path) -> None:
    assert not tmp_path.resolve().is_relative_to(ROOT)
    wheels = tmp_path / "dist"
    built = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                  "-w", str(wheels), str(ROOT)], cwd=tmp_path, timeout=300)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = wheels.glob("elastic_atlas-*.whl")

    venv = tmp_path / "venv"
    made = _run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], cwd=tmp_path,
                timeout=300)
    assert made.returncode == 0, made.stderr[-3000:]
    python = venv / "bin" / "python"
    probe = _run([str(python), "-m", "pip", "download", "--no-deps", "-q", "-d", str(tmp_path / "probe"),
                  "tqdm"], cwd=tmp_path, timeout=120)
    if probe.returncode != 0:
        pytest.skip("pip cannot reach a package index here, and the install needs one for the dependencies "
                    f"(CI has one): {probe.stderr.strip().splitlines()[-1:]}")

    installed = _run([str(python), "-m", "pip", "install", "-q", str(wheel)], cwd=tmp_path, timeout=900)
    assert installed.returncode == 0, installed.stderr[-3000:]
    used = _run([str(python), "-c", SMOKE], cwd=tmp_path, timeout=300)
    assert used.returncode == 0, used.stderr[-3000:]
    result = json.loads(used.stdout.strip().splitlines()[-1])
    assert Path(result["file"]).resolve().is_relative_to(venv.resolve())  # the installed copy, not the checkout
    assert result["hit"] == "Alice prefers oat milk" and 0 < result["tokens"] <= 50 and result["count"] == 2
    assert result["bpe_openai"] is False  # the cl100k table ships inside shared_core
    assert not {"langchain-core", "llama-index-core", "mcp", "chromadb", "faiss-cpu"} & set(result["packages"])
    size = _site_packages_mb(venv)
    print(f"core install: {size} MB in {len(result['packages'])} packages")
    assert size <= CORE_CEILING_MB, f"the core install grew to {size} MB (ceiling {CORE_CEILING_MB} MB)"
