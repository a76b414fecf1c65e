"""``--load``, ``--save`` and ``--store``: the server's atlas survives a restart, and a running
server keeps its save file current."""

from __future__ import annotations

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError
from shared_core.apps.mcp import main
from shared_core.apps.mcp._autosave import AutoSaver

from ._helpers import FAST, TIMEOUT, http_server, ok, stdio_client


async def test_a_stored_atlas_survives_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "memory.atlas"
    with anyio.fail_after(3 * TIMEOUT):
        async with stdio_client(*FAST, "--store", str(store)) as client:
            kept = ok(await client.call_tool("memory_write", {"content": "Alice's locker code is 2468",
                                                              "pinned": True}))
            gone = ok(await client.call_tool("memory_write", {"content": "Alice parked on level 3"}))
            ok(await client.call_tool("memory_forget", {"id": gone["id"]}))
        assert store.is_file()  # saved when the client closed the server's stdin
        async with stdio_client(*FAST, "--store", str(store)) as client:
            found = ok(await client.call_tool("memory_search", {"query": "locker code", "top_k": 5}))
            assert [(m["id"], m["content"]) for m in found["memories"]] == [(kept["id"],
                                                                            "Alice's locker code is 2468")]
            assert ok(await client.call_tool("memory_stats", {}))["pinned"] == 1
    loaded = ElasticMemoryAtlas.load(store)
    assert [n.content for n in loaded.memories(namespace="alice")] == ["Alice's locker code is 2468"]


async def test_a_chroma_store_survives_a_restart(tmp_path: Path) -> None:
    """``--store chroma:DIR``: every write goes durably into the directory (no save file)."""
    store = tmp_path / "memory"
    with anyio.fail_after(4 * TIMEOUT):
        async with stdio_client(*FAST, "--store", f"chroma:{store}") as client:
            kept = ok(await client.call_tool("memory_write", {"content": "Alice's locker code is 2468"}))
        assert (store / "elastic_atlas.sqlite3").is_file()
        async with stdio_client(*FAST, "--store", f"chroma:{store}") as client:
            found = ok(await client.call_tool("memory_search", {"query": "locker code", "top_k": 5}))
            assert [m["id"] for m in found["memories"]] == [kept["id"]]


async def test_a_running_http_server_saves_as_it_goes_and_on_sigterm(tmp_path: Path) -> None:
    saved = tmp_path / "memory.atlas"
    with http_server(*FAST, "--save", str(saved), "--save-every", "0.2") as server:
        with anyio.fail_after(2 * TIMEOUT):
            async with Client(server.url, read_timeout_seconds=TIMEOUT) as client:
                ok(await client.call_tool("memory_write", {"content": "The spare key is under the blue pot"}))
                deadline = time.monotonic() + TIMEOUT
                while not saved.exists():  # the periodic save, while the server runs
                    assert time.monotonic() < deadline, server.stderr
                    await anyio.sleep(0.05)
                ok(await client.call_tool("memory_write", {"content": "The wifi password is on the fridge"}))
        assert server.stop() == 0, server.stderr
    contents = sorted(n.content for n in ElasticMemoryAtlas.load(saved).memories(namespace="alice"))
    assert contents == ["The spare key is under the blue pot", "The wifi password is on the fridge"]


def test_load_starts_from_the_file_and_keeps_its_configuration(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    from shared_core import AtlasConfig
    from shared_core.apps.mcp._cli import build_parser, open_atlas

    path = tmp_path / "memory.atlas"
    atlas = ElasticMemoryAtlas(config=AtlasConfig(max_nodes=50), embedder=HashingEmbedder(dim=64))
    atlas.add_memory("Bob likes jazz", namespace="bob")
    atlas.save(path)
    loaded = open_atlas(build_parser().parse_args(["--load", str(path), "--max-nodes", "9"]), path)
    assert loaded.config.max_nodes == 50 and loaded.embedder.dim == 64 and len(loaded) == 1


@pytest.mark.parametrize(("args", "expected"), [
    (["--load", "{tmp}/missing.atlas"], "no saved atlas"),
    (["--load", "{tmp}/junk.atlas"], "junk.atlas"),
    (["--save", "{tmp}/no/such/dir/memory.atlas"], "does not exist"),
])
def test_files_that_cannot_be_used_stop_the_server_at_start(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                          args: list[str], expected: str) -> None:
    (tmp_path / "junk.atlas").write_bytes(b"not a zip file")
    status = main(["--embedder", "hashing", *(a.format(tmp=tmp_path) for a in args)])
    err = capsys.readouterr().err
    assert status == 2 and err.startswith("elastic-atlas-mcp: error: ") and expected in err


def test_store_excludes_load_and_save(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--store", "a.atlas", "--save", "b.atlas"])
    assert "--store" in capsys.readouterr().err


def test_the_autosaver_saves_only_what_changed(tmp_path: Path) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
    path = tmp_path / "memory.atlas"
    saver = AutoSaver(atlas, path, every=0)
    assert saver.save_if_changed() and path.exists()  # a missing file is out of date
    assert not saver.save_if_changed()
    atlas.add_memory("Carol plays chess", namespace="carol")
    assert saver.save_if_changed() and not saver.save_if_changed()
    atlas.retrieve("chess", namespace="carol")  # recall reinforces: a change worth saving
    assert saver.close() and saver.saves == 3
    path.unlink()
    path.mkdir()  # now the save cannot replace it
    broken = AutoSaver(atlas, path, every=0)
    atlas.add_memory("Carol plays go", namespace="carol")
    with pytest.raises(OSError):
        broken.close()
    assert broken.saves == 0 and not any(tmp_path.glob(".memory.atlas.*"))  # no temporary file left


def test_the_autosaver_saves_in_the_background_and_logs_a_failed_round(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """Its rounds run on a `MaintenanceTimer` thread: a change is saved within a round; a round
    whose save fails is logged and the next one saves; a bad ``every`` is refused with nothing
    left subscribed."""
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
    subscribers = list(atlas.events._subscribers)
    for every in (-1, float("nan"), True):
        with pytest.raises(InvalidInputError, match="every must be"):
            AutoSaver(atlas, tmp_path / "memory.atlas", every=every)  # type: ignore[arg-type]
    assert atlas.events._subscribers == subscribers
    path = tmp_path / "memory.atlas"
    path.mkdir()  # the first rounds cannot replace it
    saver = AutoSaver(atlas, path, every=0.01)
    try:
        atlas.add_memory("Dan keeps bees", namespace="dan")
        deadline = time.monotonic() + TIMEOUT
        while "could not save the atlas" not in caplog.text:
            assert time.monotonic() < deadline, "no failed round was logged"
            time.sleep(0.01)
        path.rmdir()
        while saver.saves == 0:
            assert time.monotonic() < deadline, "no round saved after the failure"
            time.sleep(0.01)
        assert [n.content for n in ElasticMemoryAtlas.load(path).memories(namespace="dan")] == ["Dan keeps bees"]
    finally:
        saver.close()
    assert atlas.events._subscribers == subscribers
