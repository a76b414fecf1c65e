"""The README and the docs are run: every ```python block, top to bottom, one file per process.

Blocks fenced as ```python run; blocks fenced otherwise (```bash, ```text, ```py) are shown only.
Each file runs in a fresh interpreter with the network cut off, so an example that would download
something fails here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_NO_NETWORK = (
    "import socket\n"
    "def _refuse(*a, **k):\n"
    "    raise OSError('network access attempted by a documentation example')\n"
    "socket.create_connection = _refuse\n"
    "socket.getaddrinfo = _refuse\n"
)


def python_blocks(path: Path) -> list[str]:
    return _BLOCK.findall(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", [p for p in DOCS if p.exists()], ids=lambda p: p.name)
def test_examples_run_as_written(path: Path, tmp_path: Path) -> None:
    blocks = python_blocks(path)
    if not blocks:
        pytest.skip(f"{path.name} has no python blocks")
    script = tmp_path / f"{path.stem}_examples.py"
    script.write_text(_NO_NETWORK + "\n\n".join(blocks), encoding="utf-8")
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning:shared_core", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, f"{path.name} examples failed:\n{out.stdout}\n{out.stderr}"


def test_readme_shows_the_two_commands_first() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_code = text.index("```")
    assert "make demo" in text[first_code:first_code + 200] and "make test" in text[first_code:first_code + 200]
