"""Bad URLs, unreachable or silent servers, a server without the module, a missing extra: each a
clear error, quickly, never a hang."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from shared_core import BackendError, ElasticMemoryAtlas, HashingEmbedder, InvalidInputError
from shared_core.store.falkordb import FalkorDBBackend, parse_url
from shared_core.store.falkordb.server import free_port, server_binary


@pytest.mark.parametrize("url", [
    "falkordb://", "falkordb://127.0.0.1:99999", "falkordb://127.0.0.1:abc", "http://127.0.0.1:6379",
    "falkordb://127.0.0.1:6379/graphs", "falkordb://127.0.0.1?ttl=soon", "falkordb://127.0.0.1?ttl=0",
    "falkordb://127.0.0.1?colour=blue", "falkordb://127.0.0.1?timeout=-1", "mongodb://127.0.0.1",
])
def test_bad_urls_are_refused_before_connecting(url: str) -> None:
    start = time.monotonic()
    with pytest.raises(InvalidInputError) as info:
        ElasticMemoryAtlas(embedder=HashingEmbedder(dim=16), backend=url)
    assert time.monotonic() - start < 1.0 and url.split("?")[0][:12] in str(info.value)


def test_url_options_are_read() -> None:
    s = parse_url("falkordb://bob:s%40cret@example.org:7000?ttl=60&prefix=p:&timeout=3&retry_for=0.5")
    assert (s.host, s.port, s.username, s.password, s.namespace_ttl, s.prefix, s.timeout, s.retry_for) == (
        "example.org", 7000, "bob", "s@cret", 60, "p:", 3.0, 0.5)


def test_a_server_that_is_down_fails_fast() -> None:
    port = free_port()  # nothing listens there
    start = time.monotonic()
    with pytest.raises(BackendError, match=f"127.0.0.1:{port}"):
        FalkorDBBackend.from_url(f"falkordb://127.0.0.1:{port}?retry_for=1", dim=16)
    assert time.monotonic() - start < 5.0


def test_a_server_that_never_answers_times_out() -> None:
    with socket.socket() as silent:  # accepts connections (the backlog) and never replies
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        start = time.monotonic()
        with pytest.raises(BackendError, match="cannot reach"):
            FalkorDBBackend.from_url(f"falkordb://127.0.0.1:{port}?timeout=0.3&retry_for=0.5", dim=16)
        assert time.monotonic() - start < 5.0


def test_a_redis_without_the_module_is_named(tmp_path: Path) -> None:
    binary, _ = server_binary()
    port = free_port()
    plain = subprocess.Popen([str(binary), "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                              "--appendonly", "no", "--dir", str(tmp_path)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        with pytest.raises(BackendError, match="no FalkorDB module"):
            FalkorDBBackend.from_url(f"falkordb://127.0.0.1:{port}?retry_for=5", dim=16)
    finally:
        plain.terminate()
        plain.wait(timeout=10)


def test_the_client_loads_only_when_used_and_a_missing_extra_names_it() -> None:
    code = (
        "import sys\n"
        "import shared_core, shared_core.store.falkordb\n"
        "assert 'falkordb' not in sys.modules and 'redis' not in sys.modules, 'loaded eagerly'\n"
        "sys.modules['falkordb'] = None\n"
        "from shared_core import ElasticMemoryAtlas, HashingEmbedder, MissingDependencyError\n"
        "try:\n"
        "    ElasticMemoryAtlas(embedder=HashingEmbedder(dim=8), backend='falkordb://127.0.0.1:1')\n"
        "except MissingDependencyError as exc:\n"
        "    assert isinstance(exc, ImportError) and \"elastic-atlas[falkordb]\" in str(exc), exc\n"
        "    print('ok')\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr
