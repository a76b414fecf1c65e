"""The wheel ships every package, its data files and the console scripts' modules."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("shared_core", "langchain_atlas", "llamaindex_atlas")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                    "-w", str(out), str(ROOT)], check=True, capture_output=True, timeout=300)
    (path,) = out.glob("elastic_atlas-*.whl")
    return zipfile.ZipFile(path)


def test_every_package_and_data_file_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    for package in PACKAGES:
        for init in (ROOT / package).rglob("__init__.py"):
            assert str(init.relative_to(ROOT)) in names, init
        assert f"{package}/py.typed" in names
    for data in ("shared_core/_data/minilm_tokenizer.json", "shared_core/_data/NOTICE.md",
                 "shared_core/demo_conversation.json"):
        assert data in names, data


def test_console_scripts_point_at_shipped_modules(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    entry_points = next(n for n in names if n.endswith("entry_points.txt"))
    scripts = wheel.read(entry_points).decode().split("[console_scripts]")[1].split("[")[0]
    for line in filter(None, (line.strip() for line in scripts.splitlines())):
        module = line.split("=")[1].split(":")[0].strip()
        path = module.replace(".", "/")
        assert f"{path}.py" in names or f"{path}/__init__.py" in names, line


def test_extras_bring_what_their_docs_use(wheel: zipfile.ZipFile) -> None:
    metadata = wheel.read(next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))).decode()
    requires = [line.split(":", 1)[1].strip() for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    extra = {name: [r.split(";")[0] for r in requires if f'extra == "{name}"' in r]
             for name in ("notebooks", "langchain")}
    assert any(r.startswith("nbconvert") for r in extra["notebooks"])  # `jupyter nbconvert --execute`
    assert any(r.startswith("langchain>=") for r in extra["langchain"])  # langchain.agents.create_agent
    core = [r for r in requires if "extra ==" not in r]
    assert not any(r.startswith("bpe-openai") for r in core)  # the cl100k table ships in shared_core/_data
    assert "shared_core/_data/cl100k_base.tiktoken.gz" in wheel.namelist()
