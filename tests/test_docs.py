"""The README and the docs are run: every ```python block on its own, in a fresh interpreter,
from a directory outside the repository.

A reader copies one block, not the page: so each block runs alone (no names from an earlier block),
in its own process, with the working directory a temporary one (nothing found by being next to
the checkout) and the network cut off (an example that would download something fails here).
Blocks fenced as ```python run; blocks fenced otherwise (```bash, ```text, ```py) are shown only.
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


def python_blocks(path: Path) -> list[tuple[int, str]]:
    """Each ```python block of ``path`` with the line its code starts on."""
    text = path.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1)) for m in _BLOCK.finditer(text)]


BLOCKS = [(path, line, code) for path in DOCS if path.exists() for line, code in python_blocks(path)]


def test_there_are_blocks_to_run() -> None:
    names = {path.name for path, _, _ in BLOCKS}
    assert {"README.md", "langchain.md", "llamaindex.md"} <= names


@pytest.mark.parametrize(("path", "line", "code"), BLOCKS, ids=[f"{p.name}:{n}" for p, n, _ in BLOCKS])
def test_each_block_runs_alone(path: Path, line: int, code: str, tmp_path: Path) -> None:
    assert not tmp_path.resolve().is_relative_to(ROOT)
    script = tmp_path / f"{path.stem}_line{line}.py"
    (tmp_path / "_no_network.py").write_text(_NO_NETWORK, encoding="utf-8")
    # one import line, then blank lines: a traceback's line numbers are the page's
    script.write_text("import _no_network\n" + "\n" * max(0, line - 2) + code, encoding="utf-8")
    out = subprocess.run([sys.executable, "-W", "error::DeprecationWarning:shared_core", str(script)],
                         capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert out.returncode == 0, f"{path.name} block at line {line} failed on its own:\n{out.stdout}\n{out.stderr}"


def test_readme_shows_the_two_commands_first() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    first_code = text.index("```")
    assert "make demo" in text[first_code:first_code + 200] and "make test" in text[first_code:first_code + 200]


def test_install_lines_work_without_a_package_index() -> None:
    """Elastic Atlas is not on PyPI: no page may tell a reader to install it from there."""
    pages = [*DOCS, *ROOT.glob("*_atlas/*.py"), *(ROOT / "shared_core").rglob("*.py")]
    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not re.search(r"pip install [\"']?elastic-atlas", text), page
