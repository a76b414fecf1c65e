"""The chroma backend's URL, options and collection names (no directory opened)."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from shared_core.store.chroma import ChromaBackend, collection_name
from shared_core.store.chroma._store import DB_NAME, Store
from shared_core.values.errors import CorruptFileError, InvalidInputError


def test_url_options() -> None:
    backend = ChromaBackend.from_url("chroma://rel/dir?durability=sync&flush_interval=0.05&checkpoint_bytes=4096")
    assert (backend.path.name, backend.durability, backend.flush_interval, backend.checkpoint_bytes) == \
        ("dir", "sync", 0.05, 4096)
    assert ChromaBackend.from_url("chroma:/abs/dir").path.as_posix() == "/abs/dir"


@pytest.mark.parametrize("url", ["chroma:", "chroma:dir?durability=eventually", "chroma:dir?speed=1",
                                 "chroma:dir?flush_interval=soon", "chroma:dir?checkpoint_bytes=0", "chroma:dir?x"])
def test_bad_urls_are_refused(url: str) -> None:
    with pytest.raises(InvalidInputError):
        ChromaBackend.from_url(url)


@pytest.mark.parametrize("namespace", ["alice", "Bob's notes", "a", "trailing-", "x" * 600, "ünïcødé",
                                       "atlas.b32.x", "a" * 500, "a" * 501, "1.2.3.4"])
def test_collection_names_are_valid_and_distinct(namespace: str) -> None:
    name = collection_name(namespace)
    assert 3 <= len(name) <= 512 and re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]", name)
    assert ".." not in name
    others = {collection_name(n) for n in ("alice", "Bob's notes", "trailing-", "atlas.b32.x", "a" * 501)
              if n != namespace}
    assert name not in others


def test_an_unknown_option_is_named_as_unknown() -> None:
    with pytest.raises(InvalidInputError, match="unknown option 'speed'"):
        ChromaBackend.from_url("chroma:dir?speed=1")
    with pytest.raises(InvalidInputError, match="bad value 'soon' for 'flush_interval'"):
        ChromaBackend.from_url("chroma:dir?flush_interval=soon")


@pytest.mark.parametrize("table", ["namespaces", "memories"])
def test_a_store_table_sqlite_cannot_read_is_a_corrupt_file(tmp_path: Path, table: str) -> None:
    """Each read of the directory's sqlite file (`_store.Store._rows`) turns sqlite's error into
    `CorruptFileError` naming the directory."""
    store = Store(tmp_path, dim=4, read_only=False)
    assert store.registered() == {} and store.memory_ids() == {}
    with sqlite3.connect(tmp_path / DB_NAME) as other:
        other.execute(f"DROP TABLE {table}")
    read = store.registered if table == "namespaces" else store.memory_ids
    with pytest.raises(CorruptFileError, match=f"the store of {re.escape(repr(str(tmp_path)))} is unreadable"):
        read()
