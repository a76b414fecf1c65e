"""Save and load: a lossless round trip (property test), atomic writes, and damaged files that fail
cleanly with nothing half-loaded; JSONL and GraphML exports."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from shared_core import (
    AtlasConfig,
    CorruptFileError,
    ElasticMemoryAtlas,
    HashingEmbedder,
    InProcessBackend,
    InvalidInputError,
    ManualClock,
    MemoryEdge,
)
from shared_core.text.embedding import CallableEmbedder

from ._fp16 import as_stored
from ._state import snapshot

TEXTS = ["User lives in Paris", "User lives in Berlin", "ok thanks!", "The meeting is at 3pm",
         "The meeting is at 5pm", "We booked the hotel in Porto for May 3", "we booked the hotel in porto for may 3!",
         "Ana's birthday is on June 12", "hi", "The budget is 4000 euros", "Remember: the door code is 4411"]
ADD = st.tuples(st.just("add"), st.integers(0, 1), st.integers(0, 2), st.integers(0, len(TEXTS) - 1), st.booleans(),
                st.sampled_from([None, 3600.0]), st.sampled_from([{}, {"key": True}, {"type": "fact", "n": 1.5}]))
OPS = st.one_of(
    ADD, ADD, ADD,
    st.tuples(st.just("update"), st.integers(0, 50)),
    st.tuples(st.just("link"), st.integers(0, 50), st.integers(0, 50)),
    st.tuples(st.just("forget"), st.integers(0, 50)),
    st.tuples(st.just("recall"), st.integers(0, len(TEXTS) - 1), st.integers(0, 2)),
    st.tuples(st.just("advance"), st.integers(1, 24 * 40)),
    st.tuples(st.just("end"), st.integers(0, 1), st.integers(0, 2)),
    st.tuples(st.just("compress")),
)
#: every kind of state first: held turns, a contradiction, a merge, a chapter, key memories, TTLs
PRELUDE: list[tuple[Any, ...]] = [("add", 0, 0, t, t == 10, 3600.0 if t == 3 else None, {"key": True} if t < 2 else {})
                                  for t in range(len(TEXTS))] + [("advance", 24 * 45), ("compress",), ("recall", 0, 0)]


def _run(atlas: ElasticMemoryAtlas, clock: ManualClock, ops: list[tuple[Any, ...]]) -> None:
    for op in ops:
        ids = [n.id for ns in ("n0", "n1") for n in atlas.memories(namespace=ns)]
        if op[0] == "add":
            _, ns, s, t, pinned, ttl, meta = op
            atlas.add_memory(TEXTS[t], namespace=f"n{ns}", session_id=f"s{s}", pinned=pinned, ttl=ttl, metadata=meta)
        elif op[0] == "update" and ids:
            atlas.update_memory(ids[op[1] % len(ids)], f"corrected version {op[1]}")
        elif op[0] == "link" and len(ids) > 1:
            a, b = ids[op[1] % len(ids)], ids[op[2] % len(ids)]
            if a != b and atlas.get(a).namespace == atlas.get(b).namespace:
                atlas.link(a, b, relation="caused_by", strength=0.5)
        elif op[0] == "forget" and ids:
            atlas.forget(ids[op[1] % len(ids)])
        elif op[0] == "recall":
            atlas.retrieve(TEXTS[op[1]], namespace="n0", session_id=f"s{op[2]}", cross_session=True)
        elif op[0] == "advance":
            clock.advance(hours=op[1])
        elif op[0] == "end":
            atlas.end_session(f"s{op[2]}", namespace=f"n{op[1]}")
        elif op[0] == "compress":
            atlas.compress()


def _live_expiry(atlas: ElasticMemoryAtlas) -> list[tuple[float, str]]:
    """The expiry heap's entries for memories that still exist (the heap drops the others lazily)."""
    return sorted((at, i) for at, i in atlas._life._expiry if i in atlas._where and atlas.get(i).expires_at == at)


def _edge(e: MemoryEdge) -> tuple[Any, ...]:
    return e.source, e.target, e.relation.value, e.strength, e.created_at, json.dumps(dict(e.metadata))


def _same(a: ElasticMemoryAtlas, b: ElasticMemoryAtlas) -> None:
    assert snapshot(b) == snapshot(a)
    assert b.config == a.config
    assert b.events.records() == a.events.records() and b.events.totals() == a.events.totals()
    assert b._life.state() == a._life.state()
    assert b._life._node_bytes == a._life._node_bytes
    assert _live_expiry(b) == _live_expiry(a)
    for ns in a.namespaces():
        part_a, part_b = a.backend.partition(ns), b.backend.partition(ns)
        assert part_a is not None and part_b is not None
        assert part_b._times == part_a._times
        for node in a.memories(namespace=ns, include_history=True):
            assert b.history(node.id) == a.history(node.id)
            assert sorted(map(_edge, b.edges(node.id))) == sorted(map(_edge, a.edges(node.id)))
        for query in ("Paris", "meeting time", "door code"):
            assert [(h.node.id, h.score) for h in b.retrieve(query, namespace=ns, reinforce=False)] == \
                [(h.node.id, h.score) for h in a.retrieve(query, namespace=ns, reinforce=False)]
    # the vector index's spare capacity depends on its growth history, not on what it holds
    assert replace(b.stats(), bytes_used=0, vector_bytes=0) == replace(a.stats(), bytes_used=0, vector_bytes=0)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(ops=st.lists(OPS, max_size=40))
def test_property_save_and_load_round_trip_everything(tmp_path: Path, ops: list[tuple[Any, ...]]) -> None:
    clock = ManualClock(1_700_000_000.0)
    config = AtlasConfig.managed(max_nodes=25, chapter_size=4, compress_every=7, similar_threshold=0.4)
    atlas = ElasticMemoryAtlas(config=config, embedder=HashingEmbedder(dim=32), clock=clock, event_log_size=500)
    _run(atlas, clock, PRELUDE + ops)
    path = atlas.save(tmp_path / "memory.atlas")
    loaded = ElasticMemoryAtlas.load(path, clock=clock)
    _same(atlas, loaded)
    assert loaded.events.maxlen == 500
    loaded.add_memory("life goes on after a load", namespace="n0", session_id="s0")  # the loaded atlas works


@pytest.fixture
def saved(make_atlas: Any, tmp_path: Path) -> tuple[ElasticMemoryAtlas, Path]:
    atlas = make_atlas()
    atlas.add_memories(["User prefers oat milk", "Ana lives in Porto", "The budget is 4000 euros"], namespace="u",
                       session_id="s")
    atlas.add_memory("Bob's PIN is 4921", namespace="bob")
    return atlas, atlas.save(tmp_path / "a.atlas")


def _rewrite(path: Path, change: Any) -> None:
    """Apply ``change(state, arrays)`` to a saved file, re-signing it, so only the checks on
    meaning (not the checksums) can catch the damage."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    state = json.loads(members["state.json"])
    arrays = {n: np.load(io.BytesIO(d)) for n, d in members.items() if n.endswith(".npy")}
    change(state, arrays)
    members["state.json"] = json.dumps(state).encode()
    for name, array in arrays.items():
        buf = io.BytesIO()
        np.save(buf, array)
        members[name] = buf.getvalue()
    manifest = json.loads(members["manifest.json"])
    manifest["sha256"] = {n: hashlib.sha256(d).hexdigest() for n, d in members.items() if n != "manifest.json"}
    members["manifest.json"] = json.dumps(manifest).encode()
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)


def test_a_truncated_file_fails_cleanly(saved: tuple[ElasticMemoryAtlas, Path]) -> None:
    _, path = saved
    data = path.read_bytes()
    for size in (0, 10, len(data) // 3, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:size])
        with pytest.raises(CorruptFileError, match="truncated or corrupt"):
            ElasticMemoryAtlas.load(path)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(position=st.floats(0.0, 1.0, exclude_max=True), value=st.integers(1, 255))
def test_property_a_damaged_byte_is_caught_or_harmless(saved: tuple[ElasticMemoryAtlas, Path], position: float,
                                                       value: int) -> None:
    atlas, path = saved
    data = bytearray(path.read_bytes())
    data[int(position * len(data))] ^= value
    damaged = path.with_name("damaged.atlas")
    damaged.write_bytes(bytes(data))
    try:
        loaded = ElasticMemoryAtlas.load(damaged)
    except CorruptFileError:
        return
    assert snapshot(loaded) == snapshot(atlas)  # the byte was in a field zip readers ignore


def test_foreign_and_future_files_are_refused(saved: tuple[ElasticMemoryAtlas, Path], tmp_path: Path) -> None:
    _, path = saved
    other = tmp_path / "notes.zip"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("readme.txt", "hello")
    with pytest.raises(CorruptFileError, match=r"manifest\.json"):
        ElasticMemoryAtlas.load(other)
    (tmp_path / "text.atlas").write_text("not a zip at all")
    with pytest.raises(CorruptFileError):
        ElasticMemoryAtlas.load(tmp_path / "text.atlas")
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    manifest = json.loads(members["manifest.json"])
    manifest["version"] = 3
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in {**members, "manifest.json": json.dumps(manifest).encode()}.items():
            zf.writestr(name, data)
    with pytest.raises(CorruptFileError, match="version 3; this library reads versions 1 to 2"):
        ElasticMemoryAtlas.load(path)
    with pytest.raises(FileNotFoundError):
        ElasticMemoryAtlas.load(tmp_path / "missing.atlas")


DAMAGE = [
    ("edge to nowhere", lambda s, a: s["partitions"][1]["edges"].append(
        {**s["partitions"][1]["edges"][0], "target": "ghost"}), "points outside"),
    ("node field type", lambda s, a: s["partitions"][0]["nodes"][0].update(weight="heavy"), "weight"),
    ("unknown node field", lambda s, a: s["partitions"][0]["nodes"][0].update(colour=1), "colour"),
    ("vector shape", lambda s, a: a.update({k: v[:, :3] for k, v in a.items()}), "shape"),
    ("nan vector", lambda s, a: a["vectors/0.npy"].__setitem__((0, 0), np.nan), "NaN"),
    ("session order", lambda s, a: s["partitions"][1]["sessions"][0][1].append("ghost"), "session"),
    ("config value", lambda s, a: s["config"].update(half_life=-1), "half_life"),
    ("config field", lambda s, a: s["config"].update(colour="red"), "colour"),
    ("event record", lambda s, a: s["events"]["records"].append({"kind": 3}), "event"),
    ("relation", lambda s, a: s["partitions"][1]["edges"][0].update(relation="loves"), "loves"),
    ("missing field", lambda s, a: s.pop("lifecycle"), "lifecycle"),
    ("held turn", lambda s, a: s["lifecycle"]["held"].append({"id": 1}), "lacks .content."),
]


@pytest.mark.parametrize(("name", "change", "fragment"), DAMAGE, ids=[d[0] for d in DAMAGE])
def test_damage_with_valid_checksums_is_caught_with_nothing_half_loaded(saved: tuple[ElasticMemoryAtlas, Path],
                                                                        name: str, change: Any,
                                                                        fragment: str) -> None:
    _, path = saved
    _rewrite(path, change)
    backend = InProcessBackend(dim=256)
    with pytest.raises(CorruptFileError, match=fragment):
        ElasticMemoryAtlas.load(path, backend=backend)
    assert list(backend.namespaces()) == []


def test_saving_is_atomic(saved: tuple[ElasticMemoryAtlas, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    atlas, path = saved
    before = path.read_bytes()
    atlas.add_memory("a memory that never reaches the disk", namespace="u")

    def fail(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(zipfile.ZipFile, "writestr", fail)
    with pytest.raises(OSError, match="disk full"):
        atlas.save(path)
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left behind
    monkeypatch.undo()
    loaded = ElasticMemoryAtlas.load(atlas.save(path))
    assert loaded.count(namespace="u") == 4
    with pytest.raises(InvalidInputError, match="does not exist"):
        atlas.save(path.parent / "no" / "such" / "dir.atlas")


def test_the_embedder_is_rebuilt_or_must_be_passed(tmp_path: Path, clock: ManualClock) -> None:
    custom = CallableEmbedder(lambda texts: [[float(len(t)), 1.0, 0.5] for t in texts], dim=3)
    atlas = ElasticMemoryAtlas(embedder=custom, clock=clock)
    atlas.add_memory("three dimensions", namespace="u")
    path = atlas.save(tmp_path / "custom.atlas")
    with pytest.raises(InvalidInputError, match="pass embedder="):
        ElasticMemoryAtlas.load(path)
    with pytest.raises(InvalidInputError, match="dimension 3"):
        ElasticMemoryAtlas.load(path, embedder=HashingEmbedder(dim=8))
    assert ElasticMemoryAtlas.load(path, embedder=custom).count(namespace="u") == 1
    hashed = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=24), clock=clock)
    hashed.add_memory("twenty-four", namespace="u")
    loaded = ElasticMemoryAtlas.load(hashed.save(tmp_path / "h.atlas"))
    assert loaded.embedder.dim == 24 and loaded.retrieve("twenty-four", namespace="u")[0].node.content == "twenty-four"


def test_exports_for_other_tools(saved: tuple[ElasticMemoryAtlas, Path], tmp_path: Path) -> None:
    atlas, _ = saved
    lines = [json.loads(line) for line in atlas.export_jsonl(tmp_path / "m.jsonl", embeddings=True).read_text()
             .splitlines()]
    nodes = [r for r in lines if r["type"] == "node"]
    edges = [r for r in lines if r["type"] == "edge"]
    assert len(nodes) == len(atlas) and len(edges) == atlas.stats().edges
    assert {n["content"] for n in nodes} >= {"User prefers oat milk", "Bob's PIN is 4921"}
    assert len(nodes[0]["embedding"]) == 256 and nodes[0]["created_at"].endswith("+00:00")
    only_bob = atlas.export_jsonl(tmp_path / "bob.jsonl", namespace="bob").read_text().splitlines()
    assert [json.loads(line)["namespace"] for line in only_bob] == ["bob"]
    graph = nx.read_graphml(atlas.export_graphml(tmp_path / "m.graphml"))
    assert graph.number_of_nodes() == len(atlas) and graph.number_of_edges() == atlas.stats().edges
    some = next(iter(graph.nodes(data=True)))[1]
    assert {"content", "namespace", "weight", "kind", "metadata"} <= set(some)


@pytest.mark.parametrize("path", [None, 3, "", b"bytes.atlas"])
def test_a_bad_path_is_refused_before_anything_happens(atlas: ElasticMemoryAtlas, path: Any) -> None:
    with pytest.raises(InvalidInputError, match="path must be"):
        atlas.save(path)
    with pytest.raises(InvalidInputError, match="path must be"):
        ElasticMemoryAtlas.load(path)
    with pytest.raises(InvalidInputError, match="path must be"):
        atlas.export_jsonl(path)


def test_a_file_saved_with_the_older_hex_ids_loads_and_takes_new_memories(saved: tuple[ElasticMemoryAtlas, Path]
                                                                           ) -> None:
    """Ids are opaque: a file from before the 24-character ids (32 hex characters) loads as is."""
    atlas, path = saved
    ids = [n.id for ns in atlas.namespaces() for n in atlas.memories(namespace=ns)]
    assert ids and all(len(i) == 24 and i.replace("-", "").replace("_", "").isalnum() for i in ids)
    old = {i: hashlib.md5(i.encode()).hexdigest() for i in ids}  # 32 hex characters

    def to_hex(state: dict[str, Any], arrays: dict[str, Any]) -> None:
        text = json.dumps(state)
        for new, hexed in old.items():
            text = text.replace(json.dumps(new), json.dumps(hexed))
        state.clear()
        state.update(json.loads(text))

    _rewrite(path, to_hex)
    loaded = ElasticMemoryAtlas.load(path)
    before = {old[n.id] for n in atlas.memories(namespace="u")}
    assert {n.id for n in loaded.memories(namespace="u")} == before
    hit = loaded.retrieve("oat milk", namespace="u", top_k=1)[0]
    assert hit.content == "User prefers oat milk" and len(hit.id) == 32
    fresh = loaded.add_memory("Ana moved to Lisbon", namespace="u", session_id="s")
    assert len(fresh.id) == 24 and loaded.retrieve("Lisbon", namespace="u", top_k=1)[0].id == fresh.id
    loaded.forget(hit.id, namespace="u")
    assert {n.id for n in loaded.memories(namespace="u")} == before - {hit.id} | {fresh.id}


def _vectors(atlas: ElasticMemoryAtlas, ids: list[str]) -> np.ndarray[Any, Any]:
    part = atlas.backend.partition("u")
    assert part is not None and part.vectors.approximate  # type: ignore[attr-defined]
    return np.stack(part.vectors.get_many(ids))  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", ["float16", "float32"])
def test_an_approximate_atlas_round_trips_its_stored_vectors(tmp_path: Path, dtype: str) -> None:
    """A save holds the vectors as the approximate index stores them (rounded to float16 by
    default, `AtlasConfig.ann_vector_dtype`); a load files them again unchanged (rounding a
    rounded vector changes nothing), so searches answer the same."""
    texts = [f"fact {i} about topic {i % 11} and colour {i % 7}" for i in range(200)]
    exact = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64, ann_vector_dtype="float32"),
                               embedder=HashingEmbedder(dim=32), clock=ManualClock(1_700_000_000.0))
    ids = [n.id for n in exact.add_memories(texts, namespace="u")]
    atlas = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64, ann_vector_dtype=dtype),  # type: ignore[arg-type]
                               embedder=HashingEmbedder(dim=32), clock=ManualClock(1_700_000_000.0))
    mine = [n.id for n in atlas.add_memories(texts, namespace="u")]
    held = _vectors(atlas, mine)
    assert held.tobytes() == as_stored(_vectors(exact, ids), dtype).tobytes()
    loaded = ElasticMemoryAtlas.load(atlas.save(tmp_path / "a.atlas"), clock=ManualClock(1_700_000_000.0))
    assert loaded.config.ann_vector_dtype == dtype and _vectors(loaded, mine).tobytes() == held.tobytes()
    for query in ("fact 17 about topic 6", "colour 3"):
        assert [(h.node.id, h.score) for h in loaded.retrieve(query, namespace="u", reinforce=False)] == \
            [(h.node.id, h.score) for h in atlas.retrieve(query, namespace="u", reinforce=False)]


def test_a_file_saved_before_ann_vector_dtype_loads_with_float16(tmp_path: Path) -> None:
    """Files saved before the field existed have float32 vectors and no ``ann_vector_dtype``:
    they load with the default, the vectors rounded to float16 as they are filed."""
    texts = [f"fact {i} about topic {i % 11}" for i in range(150)]
    old = ElasticMemoryAtlas(config=AtlasConfig(ann_threshold=64, ann_vector_dtype="float32"),
                             embedder=HashingEmbedder(dim=32), clock=ManualClock(1_700_000_000.0))
    ids = [n.id for n in old.add_memories(texts, namespace="u")]
    path = old.save(tmp_path / "old.atlas")
    _rewrite(path, lambda state, arrays: state["config"].pop("ann_vector_dtype"))
    loaded = ElasticMemoryAtlas.load(path)
    assert loaded.config.ann_vector_dtype == "float16"
    got, given = _vectors(loaded, ids), _vectors(old, ids)
    assert got.tobytes() == as_stored(given).tobytes()
    np.testing.assert_allclose(got, given, rtol=0, atol=1e-3)


def test_a_file_that_is_not_an_atlas_says_so(tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("hello, not an atlas", encoding="utf-8")
    other_zip = tmp_path / "photos.zip"
    with zipfile.ZipFile(other_zip, "w") as zf:
        zf.writestr("a.jpg", b"...")
    for path in (text, other_zip):
        with pytest.raises(CorruptFileError, match="is not an Elastic Atlas file") as info:
            ElasticMemoryAtlas.load(path)
        assert "corrupt" not in str(info.value)
