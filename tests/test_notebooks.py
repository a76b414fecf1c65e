"""The notebooks: committed without outputs, and each runs top to bottom, offline, in a real kernel.

Each notebook is executed with nbclient in a fresh IPython kernel, from the ``notebooks``
directory, with a first cell (added in memory only) that cuts the network off, as the docs test
does; a notebook that tries to download anything fails here. A notebook must also run clean: no
error, no warning and nothing else on stderr, since a user would see it. Its cost is checked as
the kernel's CPU time (a last cell, also added in memory only, reads it), which other processes
on the machine do not inflate the way they do wall time. Set ``ATLAS_NOTEBOOK_OUTPUT=<dir>`` to
keep the executed copies (``make notebooks`` writes them to ``build/notebooks``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXPECTED = ["01_quickstart", "02_langchain", "03_llamaindex", "04_elastic_dynamics", "05_locomo"]
CELL_TIMEOUT = 300  # seconds of wall time for one cell: a hang guard, not a speed target
CPU_BUDGET = 120.0  # seconds of the kernel's CPU time for one notebook, imports included
_OFFLINE = """\
import os, socket
def _refuse(*args, **kwargs):
    raise OSError("network access attempted by a notebook")
socket.create_connection = _refuse
socket.getaddrinfo = _refuse
os.environ["HF_HUB_OFFLINE"] = "1"
del _refuse
"""
_CPU = "import resource as _r\n_u = _r.getrusage(_r.RUSAGE_SELF)\nprint(_u.ru_utime + _u.ru_stime)"


def test_the_five_notebooks_are_there() -> None:
    assert [p.stem for p in NOTEBOOKS] == EXPECTED


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_committed_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"
    assert "widgets" not in nb.metadata
    for i, cell in enumerate(nb.cells):
        assert cell.source.strip(), f"{path.name}: cell {i} is empty"
        assert "execution" not in cell.metadata, f"{path.name}: cell {i} keeps execution timings"
        if cell.cell_type == "code":
            assert cell.outputs == [], f"{path.name}: cell {i} has outputs (strip them before committing)"
            assert cell.execution_count is None, f"{path.name}: cell {i} has an execution count"
    assert nb.cells[0].cell_type == "markdown" and nb.cells[0].source.startswith("# ")


def _stderr(nb: Any) -> list[str]:
    return [out["text"] for cell in nb.cells if cell.cell_type == "code"
            for out in cell.get("outputs", []) if out.get("name") == "stderr"]


def _execute(path: Path, *, setup: str = "") -> tuple[Any, float, float]:
    """Run a notebook offline; returns it (without the added cells), the wall and the CPU seconds."""
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(_OFFLINE + setup))
    nb.cells.append(nbformat.v4.new_code_cell(_CPU))
    client = nbclient.NotebookClient(nb, timeout=CELL_TIMEOUT, kernel_name="python3",
                                     resources={"metadata": {"path": str(path.parent)}})
    started = time.perf_counter()
    client.execute()
    wall = time.perf_counter() - started
    cpu = float(nb.cells[-1].outputs[0]["text"])
    del nb.cells[0], nb.cells[-1]
    return nb, wall, cpu


@pytest.mark.timeout(900)
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_runs_top_to_bottom_offline(path: Path, record_property: pytest.RecordProperty) -> None:
    nb, wall, cpu = _execute(path)
    record_property("wall_seconds", round(wall, 1))
    record_property("cpu_seconds", round(cpu, 1))
    if out := os.environ.get("ATLAS_NOTEBOOK_OUTPUT"):
        Path(out).mkdir(parents=True, exist_ok=True)
        nbformat.write(nb, Path(out) / path.name)
        print(f"{path.stem}: {wall:.1f} s wall, {cpu:.1f} s CPU")
    assert _stderr(nb) == [], f"{path.name} wrote to stderr"
    assert cpu < CPU_BUDGET, f"{path.name} took {cpu:.0f} s of CPU"


@pytest.mark.timeout(300)
def test_locomo_notebook_without_the_data_skips_gracefully(tmp_path: Path) -> None:
    path = ROOT / "notebooks" / "05_locomo.ipynb"
    nb, _, _ = _execute(path, setup=f"os.environ['LOCOMO_DATA'] = {str(tmp_path / 'absent.json')!r}\n")
    printed = "".join(out.get("text", "") for cell in nb.cells if cell.cell_type == "code" for out in cell.outputs)
    assert "LoCoMo data not found" in printed
    assert _stderr(nb) == []
    assert not any(out.output_type == "display_data" for cell in nb.cells if cell.cell_type == "code"
                   for out in cell.outputs)
