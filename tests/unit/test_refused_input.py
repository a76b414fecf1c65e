"""Input that cannot be stored is refused at the door with an `AtlasError`, and changes nothing:
text that is not valid Unicode, times outside years 1 to 9999, metadata nested without end,
config keywords that name no field, a graph page asked for a namespace that is not one. And a
correction whose last step fails is undone whole (issue 20, items 5, 6 and 8)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from shared_core import (
    AtlasConfig,
    AtlasError,
    ElasticMemoryAtlas,
    InvalidInputError,
    InvalidMemoryError,
    ManualClock,
)
from shared_core.store.memory.graph_store import DictGraphStore

from ._state import snapshot

SURROGATE = "note \ud800 x"
EARLIEST = datetime(1, 1, 2, tzinfo=UTC).timestamp()  # shared_core.values.clock.EARLIEST and LATEST
LATEST = datetime(9999, 12, 30, tzinfo=UTC).timestamp()


def _nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.fixture
def filled(atlas: ElasticMemoryAtlas) -> ElasticMemoryAtlas:
    atlas.add_memories(["User prefers oat milk", "Ana lives in Porto"], namespace="n", session_id="s")
    return atlas


BAD_WRITES: list[tuple[str, dict[str, Any]]] = [
    ("surrogate content", {"content": SURROGATE}),
    ("surrogate content with an embedding", {"content": SURROGATE, "embedding": "vector"}),
    ("low surrogate", {"content": "x \udfff"}),
    ("surrogate metadata value", {"metadata": {"k": "\udc80"}}),
    ("surrogate metadata key", {"metadata": {"\ud800": 1}}),
    ("surrogate nested metadata", {"metadata": {"k": [{"deep": "a\ud83d"}]}}),
    ("surrogate session", {"session_id": "s\ud800"}),
    ("surrogate namespace", {"namespace": "n\ud800"}),
    ("timestamp 1e20", {"timestamp": 1e20}),
    ("timestamp -1e20", {"timestamp": -1e20}),
    ("timestamp in milliseconds", {"timestamp": 1_700_000_000_000}),
    ("timestamp 1e300", {"timestamp": 1e300}),
    ("year 1 east of UTC", {"timestamp": datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=5)))}),
    ("ttl 1e20", {"ttl": 1e20}),
    ("ttl past year 9999", {"ttl": LATEST - EARLIEST}),
    ("metadata 5,000 deep", {"metadata": _nested(5000)}),
    ("metadata 33 deep", {"metadata": _nested(33)}),
    ("metadata in a list 40 deep", {"metadata": {"k": json.loads("[" * 40 + "1" + "]" * 40)}}),
]


@pytest.mark.parametrize(("name", "change"), BAD_WRITES, ids=[b[0] for b in BAD_WRITES])
def test_add_memory_refuses_what_cannot_be_stored_and_stores_nothing(filled: ElasticMemoryAtlas, name: str,
                                                                      change: dict[str, Any], tmp_path: Path) -> None:
    before = snapshot(filled)
    kwargs: dict[str, Any] = {"content": "a fine memory", "namespace": "n", **change}
    if kwargs.get("embedding") == "vector":
        kwargs["embedding"] = np.ones(filled.embedder.dim, dtype=np.float32)
    with pytest.raises(InvalidInputError) as caught:
        filled.add_memory(**kwargs)
    assert not isinstance(caught.value, (UnicodeError, RecursionError, OverflowError))
    assert snapshot(filled) == before and len(filled) == 2
    with pytest.raises(InvalidInputError):  # the same item in a batch refuses the whole batch
        filled.add_memories(["a good one", {**kwargs, "namespace": kwargs["namespace"]}], namespace="n")
    assert snapshot(filled) == before and len(filled) == 2
    path = filled.save(tmp_path / "a.atlas")  # and the atlas still saves and loads
    assert len(ElasticMemoryAtlas.load(path, embedder=filled.embedder)) == 2


def test_the_surrogate_of_the_issue_is_not_counted(atlas: ElasticMemoryAtlas, tmp_path: Path) -> None:
    emb = np.ones(atlas.embedder.dim, dtype=np.float32)
    with pytest.raises(InvalidMemoryError, match="surrogate"):
        atlas.add_memory(SURROGATE, namespace="n", embedding=emb)
    assert len(atlas) == 0 and atlas.stats().bytes_used == 0
    atlas.add_memory("note ok", namespace="n")
    assert len(ElasticMemoryAtlas.load(atlas.save(tmp_path / "a.atlas"))) == 1


@pytest.mark.parametrize("change", [{"content": SURROGATE}, {"content": "fixed", "metadata": {"k": "\udc80"}},
                                    {"content": "fixed", "metadata": _nested(5000)},
                                    {"content": "fixed", "session_id": "\ud800"}])
def test_update_memory_refuses_the_same(filled: ElasticMemoryAtlas, change: dict[str, Any]) -> None:
    node = filled.memories(namespace="n")[0]
    before = snapshot(filled)
    with pytest.raises(InvalidMemoryError if "session_id" not in change else InvalidInputError):
        filled.update_memory(node.id, **change)
    assert snapshot(filled) == before


def test_link_refuses_bad_edge_metadata(filled: ElasticMemoryAtlas) -> None:
    a, b = (n.id for n in filled.memories(namespace="n"))
    before = snapshot(filled)
    for metadata in ({"why": "\ud800"}, _nested(100)):
        with pytest.raises(InvalidMemoryError):
            filled.link(a, b, metadata=metadata)
    assert snapshot(filled) == before


def test_metadata_that_holds_itself_is_refused(atlas: ElasticMemoryAtlas) -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    with pytest.raises(InvalidMemoryError, match="deeper than 32 levels"):
        atlas.add_memory("x", namespace="n", metadata=loop)


def test_the_accepted_range_is_every_time_a_datetime_can_show(make_atlas: Any, clock: ManualClock,
                                                             tmp_path: Path) -> None:
    """The edges of the range are stored, and every read that turns times into text works."""
    atlas = make_atlas()
    first = atlas.add_memory("the first day", namespace="n", timestamp=EARLIEST)
    last = atlas.add_memory("the last day", namespace="n", timestamp=LATEST)
    aware = atlas.add_memory("an aware time", namespace="n",
                             timestamp=datetime(2024, 5, 1, tzinfo=timezone(timedelta(hours=-7))))
    forever = atlas.add_memory("a long ttl", namespace="n", ttl=LATEST - clock.now())
    assert (first.timestamp, last.timestamp) == (EARLIEST, LATEST)
    assert aware.timestamp == datetime(2024, 5, 1, 7, tzinfo=UTC).timestamp()
    assert forever.expires_at == LATEST
    for hit in atlas.retrieve("the day", namespace="n", top_k=5):
        assert hit.to_metadata()["timestamp"]
    assert atlas.build_context("first or last day", namespace="n", token_budget=400).text
    assert "the last day" in atlas.to_html(namespace="n")
    atlas.export_jsonl(tmp_path / "a.jsonl")
    atlas.export_graphml(tmp_path / "a.graphml")
    loaded = ElasticMemoryAtlas.load(atlas.save(tmp_path / "a.atlas"), clock=clock)
    assert loaded.get(last.id).timestamp == LATEST


def test_a_ttl_that_would_expire_after_year_9999_is_refused_before_anything(filled: ElasticMemoryAtlas,
                                                                            clock: ManualClock) -> None:
    before = snapshot(filled)
    with pytest.raises(InvalidMemoryError, match="after the year 9999"):
        filled.add_memory("later", namespace="n", ttl=LATEST - clock.now() + 1)
    with pytest.raises(InvalidMemoryError, match="item 1: ttl"):
        filled.add_memories([{"content": "a", "namespace": "m"}, {"content": "b", "ttl": LATEST}], namespace="n")
    assert snapshot(filled) == before


def test_config_times_are_checked_too() -> None:
    with pytest.raises(InvalidInputError, match="default_ttl"):
        AtlasConfig(default_ttl=1e20)


def test_the_range_is_defined_in_one_place() -> None:
    from shared_core.values import clock

    assert (clock.EARLIEST, clock.LATEST) == (EARLIEST, LATEST)


def test_an_unknown_config_field_names_the_closest_one() -> None:
    from shared_core import UnknownFieldError

    with pytest.raises(UnknownFieldError, match=r"no field 'bogus'") as caught:
        AtlasConfig(bogus=1)  # type: ignore[call-arg]
    assert isinstance(caught.value, AtlasError) and isinstance(caught.value, TypeError)
    with pytest.raises(TypeError, match=r"'half_lfe' \(did you mean 'half_life'\?\)"):
        AtlasConfig(half_lfe=3600)  # type: ignore[call-arg]
    with pytest.raises(InvalidInputError, match=r"did you mean 'max_nodes'"):
        AtlasConfig.managed(max_node=10)
    with pytest.raises(UnknownFieldError, match=r"did you mean 'weight_cap'"):
        AtlasConfig().replace(weight_caps=2.0)
    with pytest.raises(UnknownFieldError, match="keyword arguments only"):
        AtlasConfig(3600)  # type: ignore[misc]
    assert AtlasConfig(half_life=10).half_life == 10


@pytest.mark.parametrize(("namespace", "error"), [(5, "got 5"), ("", "got ''"), ("   ", "got '   '"),
                                                   (b"n", "got b'n'"), ("n\ud800", "surrogate")])
def test_the_graph_views_refuse_a_namespace_that_is_not_one(filled: ElasticMemoryAtlas, namespace: Any,
                                                            error: str) -> None:
    with pytest.raises(InvalidInputError, match=error):
        filled.to_html(namespace=namespace)
    with pytest.raises(InvalidInputError, match=error):
        filled.plot_weights(namespace=namespace)
    assert "Elastic Atlas · n" in filled.to_html(namespace="n")


@pytest.mark.parametrize("step", ["put_edge", "put_node"])
def test_a_correction_whose_last_step_fails_is_undone_whole(filled: ElasticMemoryAtlas, step: str,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The new version is stored; then the ``supersedes`` edge, or the old version's end, fails."""
    old = filled.memories(namespace="n")[0]
    before = snapshot(filled)
    real = getattr(DictGraphStore, step)

    def fail(self: DictGraphStore, item: Any) -> None:
        if getattr(item, "id", None) == old.id or getattr(item, "target", None) == old.id:
            raise MemoryError("no room")
        real(self, item)

    monkeypatch.setattr(DictGraphStore, step, fail)
    with pytest.raises(MemoryError):
        filled.update_memory(old.id, "User prefers soy milk")
    monkeypatch.undo()
    assert snapshot(filled) == before
    assert filled.update_memory(old.id, "User prefers soy milk").content == "User prefers soy milk"
