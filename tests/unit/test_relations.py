"""Custom relation names: registered once per atlas, validated, typed in edges, events, saves and views."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidRelationError, ManualClock, Relation
from shared_core.engine.views import RELATION_COLOURS, relation_colour
from shared_core.values.model import CustomRelation


def _pair(atlas: ElasticMemoryAtlas) -> tuple[str, str]:
    a = atlas.add_memory("The red notebook", namespace="u").id
    b = atlas.add_memory("Maya's desk drawer", namespace="u").id
    return a, b


def test_link_with_a_custom_name_raises_before_registration_and_works_after(atlas: ElasticMemoryAtlas) -> None:
    a, b = _pair(atlas)
    with pytest.raises(InvalidRelationError, match="register_relation"):
        atlas.link(a, b, relation="belongs_to")
    assert all(e.relation.value != "belongs_to" for e in atlas.edges(a))  # nothing changed
    rel = atlas.register_relation("belongs_to")
    assert atlas.register_relation("belongs_to") is rel  # idempotent
    edge = atlas.link(a, b, relation="belongs_to", strength=0.8)
    assert isinstance(edge.relation, CustomRelation) and edge.relation.value == "belongs_to"
    [stored] = [e for e in atlas.edges(a) if e.relation == "belongs_to"]
    assert stored.target == b and stored.strength == 0.8 and stored.relation is rel
    assert "belongs_to" in atlas.relations and "before" in atlas.relations
    [event] = atlas.events.events(kind="link")
    assert event.reason == "belongs_to"


def test_registration_is_per_atlas(clock: ManualClock) -> None:
    one = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), clock=clock)
    two = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), clock=clock)
    one.register_relation("owned_by")
    a, b = _pair(two)
    with pytest.raises(InvalidRelationError):
        two.link(a, b, relation="owned_by")


@pytest.mark.parametrize("bad", ["", "Belongs", "belongs-to", "1st", "a" * 49, "before", "part_of", None, 3,
                                 "drop table", "x)-[:Y]->(z"])
def test_bad_names_are_refused(atlas: ElasticMemoryAtlas, bad: object) -> None:
    with pytest.raises(InvalidRelationError):
        atlas.register_relation(bad)  # type: ignore[arg-type]
    assert atlas.relations == tuple(r.value for r in Relation)


def test_custom_relations_survive_save_and_load_and_exports(atlas: ElasticMemoryAtlas, tmp_path: Path) -> None:
    a, b = _pair(atlas)
    atlas.register_relation("belongs_to")
    atlas.register_relation("unused_kind")
    atlas.link(a, b, relation="belongs_to")
    loaded = ElasticMemoryAtlas.load(atlas.save(tmp_path / "m.atlas"))
    assert {"belongs_to", "unused_kind"} <= set(loaded.relations)
    [edge] = [e for e in loaded.edges(a) if e.relation == "belongs_to"]
    assert isinstance(edge.relation, CustomRelation) and edge.target == b
    c = loaded.add_memory("A third memory", namespace="u").id
    loaded.link(c, a, relation="unused_kind")  # registered in the saved atlas, so accepted
    rows = [json.loads(line) for line in loaded.export_jsonl(tmp_path / "m.jsonl").read_text().splitlines()]
    custom = {(r["source"], r["target"]) for r in rows if r["type"] == "edge" and r["relation"] == "belongs_to"}
    assert custom == {(a, b)}
    assert "belongs_to" in loaded.export_graphml(tmp_path / "m.graphml").read_text()


def test_recall_walks_a_custom_relation(make_atlas: object) -> None:
    atlas = make_atlas(graph_hops=1)  # type: ignore[operator]
    a, b = _pair(atlas)
    atlas.register_relation("belongs_to")
    atlas.link(a, b, relation="belongs_to", strength=1.0)
    hits = atlas.retrieve("red notebook", namespace="u", top_k=2, reinforce=False)
    assert any("graph" in h.paths for h in hits if h.node.id == b)


def test_the_view_gives_custom_relations_a_colour_and_a_legend_entry(atlas: ElasticMemoryAtlas) -> None:
    a, b = _pair(atlas)
    rel = atlas.register_relation("belongs_to")
    atlas.link(a, b, relation="belongs_to")
    assert relation_colour(rel) not in ("#8c8c8c",) and relation_colour(Relation.BEFORE) == RELATION_COLOURS[
        Relation.BEFORE]
    page = atlas.to_html()
    assert "belongs_to" in page and relation_colour(rel) in page
