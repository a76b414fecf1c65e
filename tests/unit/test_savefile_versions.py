"""Save files of format version 1 (written by the library before version 2) still load, and score
and count bytes as the live atlas that wrote them did.

Version 1 kept the lifecycle's ``indexed`` map (the keyword text of each merged memory, for byte
accounting); version 2 derives that text from the memory itself
(`shared_core.formulas.subqueries.keyword_text` of a memory with ``metadata["merged_from"]``) and
writes no map. ``data/atlas_v1.atlas`` was written by main at 89c53f9 from `build`;
``data/atlas_v1.json`` holds main's `figures` (bytes used, per namespace, and each query's hits
with their scores) of that live atlas right after the save (``live``), and of the file loaded
again (``reopened``). The two differ in bytes only by the live vector index's spare rows (the
merged memories' rows, kept for reuse, are counted), not in hits.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import pytest

from shared_core import AtlasConfig, CorruptFileError, ElasticMemoryAtlas, HashingEmbedder, ManualClock

DATA = Path(__file__).parent / "data"
START = 1_700_000_000.0
QUERIES = [("u", "what colour is the garage door"), ("u", "where did Kate go hiking"), ("bob", "Bob's PIN")]


def _atlas(**kwargs: Any) -> dict[str, Any]:
    return {"config": AtlasConfig(), "embedder": HashingEmbedder(dim=64), "clock": ManualClock(START), **kwargs}


def build() -> ElasticMemoryAtlas:
    """The atlas of the fixture: speakers in the metadata and in the text, two pairs of near
    duplicates merged (one of them of a speaker named in the metadata), a second namespace."""
    atlas = ElasticMemoryAtlas(**_atlas())
    atlas.add_memories([
        {"content": "went hiking near the lake", "metadata": {"speaker": "Kate"}},
        {"content": "the garage door is painted green", "metadata": {"speaker": "Kate"}},
        "Kate: the lake was cold",
        {"content": "The garage door is painted green!", "metadata": {"speaker": "Kate"}},
        "we moved the piano into the hall",
        "We moved the piano into the hall.",
    ], namespace="u", session_id="s")
    atlas.add_memory("Bob's PIN is 4921", namespace="bob")
    report = atlas.compress()
    assert report.absorbed == 2, report
    return atlas


def figures(atlas: ElasticMemoryAtlas) -> dict[str, Any]:
    """Bytes used (in all and per namespace), then each of `QUERIES`' hits as (content, score), in
    this order (a recall reinforces its hits)."""
    return {"bytes_used": atlas.stats().bytes_used,
            "per_namespace": {ns: atlas.stats(namespace=ns).bytes_used for ns in ("u", "bob")},
            "hits": [[[h.node.content, h.score] for h in atlas.retrieve(q, namespace=ns, top_k=5)]
                     for ns, q in QUERIES]}


def _expected(which: str) -> dict[str, Any]:
    return json.loads((DATA / "atlas_v1.json").read_text())[which]  # type: ignore[no-any-return]


def _manifest_and_lifecycle(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    with zipfile.ZipFile(path) as zf:
        return json.loads(zf.read("manifest.json")), json.loads(zf.read("state.json"))["lifecycle"]


def test_the_fixture_is_a_version_1_file_with_merged_keyword_texts() -> None:
    manifest, lifecycle = _manifest_and_lifecycle(DATA / "atlas_v1.atlas")
    assert manifest["version"] == 1 and len(lifecycle["indexed"]) == 2


def test_a_version_1_file_loads_and_scores_and_counts_as_the_atlas_that_saved_it() -> None:
    loaded = ElasticMemoryAtlas.load(DATA / "atlas_v1.atlas", **_atlas())
    assert figures(loaded) == _expected("reopened")
    assert _expected("reopened")["hits"] == _expected("live")["hits"]


def test_the_live_atlas_counts_bytes_as_main_did() -> None:
    """The derived keyword texts count as the kept ones did: the same figures from a live atlas."""
    assert figures(build()) == _expected("live")


def test_a_save_writes_version_2_without_the_keyword_texts_and_reopens_the_same(tmp_path: Path) -> None:
    loaded = ElasticMemoryAtlas.load(DATA / "atlas_v1.atlas", **_atlas())
    path = loaded.save(tmp_path / "again.atlas")
    manifest, lifecycle = _manifest_and_lifecycle(path)
    assert manifest["version"] == 2 and "indexed" not in lifecycle
    assert figures(ElasticMemoryAtlas.load(path, **_atlas())) == _expected("reopened")


def test_a_version_1_files_keyword_texts_are_still_checked(tmp_path: Path) -> None:
    """Old files are untrusted input as before: a malformed map is refused, not ignored."""
    from ._crafted import rewrite

    path = tmp_path / "v1.atlas"
    path.write_bytes((DATA / "atlas_v1.atlas").read_bytes())
    rewrite(path, lambda s, a: s["lifecycle"].update(indexed=["not", "a", "map"]), version=1)
    with pytest.raises(CorruptFileError, match="keyword texts are malformed"):
        ElasticMemoryAtlas.load(path, **_atlas())
