"""``elastic-atlas-mcp`` refuses what it cannot serve: clearly, on stderr, with a non-zero status."""

from __future__ import annotations

import subprocess
import sys

import pytest

from shared_core.apps.mcp import main

from ._helpers import SERVER


def run(*args: str, code: str | None = None) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", code] if code else [*SERVER, *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)


def test_a_backend_url_that_is_not_available_is_reported(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--embedder", "hashing", "--backend", "falkordb://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("elastic-atlas-mcp: error: ") and "falkordb://127.0.0.1:1" in err


def test_bad_options_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--fixed-namespace"])
    assert exit_.value.code == 2 and "--fixed-namespace needs --namespace" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--port", "70000"])
    assert "--port" in capsys.readouterr().err
    assert main(["--embedder", "hashing", "--max-content-chars", "0"]) == 2
    assert "max_content_chars" in capsys.readouterr().err


def test_a_missing_sdk_names_the_extra() -> None:
    code = ("import sys; sys.modules['mcp'] = None\n"
            "from shared_core.apps.mcp import main\n"
            "sys.exit(main(['--embedder', 'hashing']))")
    out = run(code=code)
    assert out.returncode == 2 and "elastic-atlas[mcp]" in out.stderr and "pip install '.[mcp]'" in out.stderr


def test_help_lists_the_options() -> None:
    out = run("--help")
    assert out.returncode == 0
    for option in ("--transport", "--host", "--namespace", "--embedder", "--backend"):
        assert option in out.stdout
