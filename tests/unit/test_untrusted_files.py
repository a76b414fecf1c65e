"""Loading a file that someone crafted (issue 20, item 7): every record is checked by the rules of
a write, JSON nesting and unpacked size are capped, and a load either builds everything or raises
`CorruptFileError` with nothing half-loaded. The crafted files carry valid checksums, so only the
checks on meaning can catch them."""

from __future__ import annotations

import tracemalloc
import zipfile
from pathlib import Path
from typing import Any

import pytest

from shared_core import CorruptFileError, ElasticMemoryAtlas, InProcessBackend, ManualClock

from ._crafted import CRAFTED, Change, bomb, rewrite, sign


@pytest.fixture
def saved(make_atlas: Any, tmp_path: Path) -> Path:
    atlas = make_atlas(write_filter=True, write_threshold=0.3)
    atlas.add_memories(["User prefers oat milk", "Ana lives in Porto", "The budget is 4000 euros"], namespace="u",
                       session_id="s")
    atlas.add_memory("ok thanks!", namespace="u", session_id="s")  # held back as working memory
    atlas.add_memory("Bob's PIN is 4921", namespace="bob", metadata={"type": "secret"})
    atlas.link(*(n.id for n in atlas.memories(namespace="u")[:2]), relation="caused_by")
    assert atlas.working_memory(namespace="u", session_id="s")
    return atlas.save(tmp_path / "a.atlas")


@pytest.mark.parametrize(("name", "change", "fragment"), CRAFTED, ids=[c[0] for c in CRAFTED])
def test_a_crafted_record_is_refused_with_nothing_half_loaded(saved: Path, name: str, change: Change,
                                                              fragment: str) -> None:
    rewrite(saved, change)
    backend = InProcessBackend(dim=256)
    with pytest.raises(CorruptFileError, match=fragment):
        ElasticMemoryAtlas.load(saved, backend=backend)
    assert list(backend.namespaces()) == []


def test_the_untouched_file_loads(saved: Path, clock: ManualClock) -> None:
    rewrite(saved, lambda s, a: None)
    atlas = ElasticMemoryAtlas.load(saved, clock=clock)
    assert len(atlas) == 4 and len(atlas.working_memory(namespace="u", session_id="s")) == 1


@pytest.mark.parametrize("depth", [100_000, 2_000, 45])
def test_deeply_nested_json_is_corrupt_not_a_recursion_error(saved: Path, depth: int) -> None:
    state = '{"config": ' + "[" * depth + "]" * depth + "}"
    sign(saved, {"state.json": state.encode()})
    with pytest.raises(CorruptFileError, match="nests deeper than 40 levels"):
        ElasticMemoryAtlas.load(saved)


def test_a_zip_bomb_is_refused_without_inflating_it(tmp_path: Path) -> None:
    """Refused from its declared size (the adversarial suite loads a bigger one with the default limit)."""
    path = tmp_path / "bomb.atlas"
    bomb(path, 48 << 20)
    assert path.stat().st_size < 100_000
    tracemalloc.start()
    try:
        with pytest.raises(CorruptFileError, match="more than the load's limit"):
            ElasticMemoryAtlas.load(path, max_unpacked=16 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20


def test_the_limit_is_enforced_while_inflating(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A member whose header understates its size is cut off at the header's size (then fails its
    CRC), and reading stops at the limit, in chunks, even if the header check were fooled."""
    with zipfile.ZipFile(saved) as zf:
        unpacked = sum(i.file_size for i in zf.infolist())
    with pytest.raises(CorruptFileError, match="max_unpacked"):
        ElasticMemoryAtlas.load(saved, max_unpacked=unpacked // 2)
    assert len(ElasticMemoryAtlas.load(saved, max_unpacked=unpacked)) == 4
    real = zipfile.ZipFile.getinfo

    def understated(self: zipfile.ZipFile, name: str) -> zipfile.ZipInfo:
        info = real(self, name)
        if name == "state.json":
            info.file_size = 10  # what a lying header would say: zipfile stops reading there
        return info

    monkeypatch.setattr(zipfile.ZipFile, "getinfo", understated)
    with pytest.raises(CorruptFileError):
        ElasticMemoryAtlas.load(saved)


def test_a_build_that_fails_halfway_leaves_the_backend_empty(saved: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every record is sound, but the store fails while the second namespace is built."""
    from shared_core.store.memory.inverted_index import InvertedKeywordIndex

    calls = []
    real = InvertedKeywordIndex.add_many

    def fail_second(self: InvertedKeywordIndex, rows: Any) -> None:
        calls.append(rows)
        if len(calls) == 2:
            raise OSError("disk full")
        real(self, rows)

    monkeypatch.setattr(InvertedKeywordIndex, "add_many", fail_second)
    backend = InProcessBackend(dim=256)
    with pytest.raises(OSError, match="disk full"):
        ElasticMemoryAtlas.load(saved, backend=backend)
    assert list(backend.namespaces()) == [] and len(calls) == 2
