"""Entity extraction (YAKE names, speaker, key phrases; the LLM hook), its config, and the
entity layer through save/load and the graph view."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from shared_core import AtlasConfig, ElasticMemoryAtlas, HashingEmbedder, InvalidInputError, ManualClock
from shared_core.text.entities import entity_key, entity_keys, extract_entities, llm_entities

ON = AtlasConfig(entity_extraction="keyphrases")


def test_names_speaker_and_phrases() -> None:
    keys = extract_entities("Caroline: I went to a LGBTQ support group near Lake Tahoe yesterday.")
    assert keys[0] == "caroline"  # the speaker's label comes first
    assert {"lake tahoe", "lgbtq"} <= set(keys)  # names inside the sentence, an acronym
    assert "tahoe" not in keys and "lake" not in keys  # a name's parts are not names of their own
    assert all(k == entity_key(k) for k in keys) and len(keys) == len(set(keys))


def test_phrases_are_bounded_and_text_without_words_has_none() -> None:
    text = "Melanie: I painted a sunset with my kids last weekend, and the pottery class went well."
    assert len(extract_entities(text, phrases=1)) < len(extract_entities(text, phrases=5))
    assert extract_entities(text, phrases=0) == ("melanie",)
    for empty in ("", "   ", "!!! ???", "123 456"):
        assert extract_entities(empty) == ()
    assert extract_entities(text) == extract_entities(text)  # deterministic


def test_a_label_is_a_speaker_only_when_it_looks_like_a_name() -> None:
    assert extract_entities("The weather: sunny all week.")[:1] != ("the weather",)  # starts with a stopword
    assert extract_entities("note: we went to the park with John.")[0] == "john"  # not capitalised
    assert "we went" not in extract_entities("We went: to the park with John.")
    assert extract_entities("Ann Lee: hello there, Lee here") == ("ann lee",)


def test_the_llm_hook_and_its_fallback() -> None:
    def model(prompt: str) -> str:
        assert prompt.endswith("Jo met Ann in Oslo.")
        return "- Jo\n- Ann\n2. Oslo\n\n"

    assert llm_entities(model, "Jo met Ann in Oslo.") == ("jo", "ann", "oslo")

    def broken(prompt: str) -> str:
        raise RuntimeError("offline")

    text = "Caroline: we camped near Lake Tahoe."
    assert llm_entities(broken, text) == extract_entities(text)
    assert llm_entities(lambda p: "  \n", text) == extract_entities(text)  # nothing usable


def test_entity_keys_follow_the_config() -> None:
    texts = ["Caroline: we camped near Lake Tahoe."]
    assert entity_keys(texts, AtlasConfig()) is None  # off by default
    assert entity_keys(texts, AtlasConfig(entity_extraction="keyphrases")) == [extract_entities(texts[0], phrases=3)]
    llm_config = AtlasConfig(entity_extraction="llm")
    assert entity_keys(texts, llm_config, llm=lambda p: "Tahoe") == [("tahoe",)]
    assert entity_keys(texts, llm_config) == [extract_entities(texts[0])]  # no llm: key phrases


@pytest.mark.parametrize("field, value", [("entity_extraction", "spacy"), ("entity_weight", -0.1),
                                          ("entity_walk", float("nan")), ("entity_phrases", -1),
                                          ("entity_max_mentions", 2.5)])
def test_bad_entity_settings_are_refused(field: str, value: Any) -> None:
    with pytest.raises(InvalidInputError, match=field):
        AtlasConfig(**{"entity_extraction": "keyphrases", field: value})


@pytest.mark.parametrize("field", ["entity_weight", "entity_walk"])
def test_recall_through_entities_needs_an_extraction(field: str) -> None:
    with pytest.raises(InvalidInputError, match="entity_extraction"):
        AtlasConfig(**{field: 0.5})
    assert getattr(AtlasConfig(entity_extraction="llm", **{field: 0.5}), field) == 0.5


def test_the_atlas_asks_its_llm_when_configured() -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), config=AtlasConfig(entity_extraction="llm"),
                               llm=lambda prompt: "Portland\nJolene")
    atlas.add_memory("a drive north", namespace="a")
    part = atlas.backend.partition("a")
    assert part is not None and sorted(part.entities.entities()) == [("jolene", 1), ("portland", 1)]


def test_save_and_load_keep_the_entities(tmp_path: Path) -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), clock=ManualClock(1_700_000_000.0), config=ON)
    atlas.add_memories(["Caroline: we camped near Lake Tahoe.", "Melanie: Lake Tahoe was cold."], namespace="a")
    before = sorted(atlas.backend.partition("a").entities.entities())  # type: ignore[union-attr]
    atlas.save(tmp_path / "atlas.zip")
    again = ElasticMemoryAtlas.load(tmp_path / "atlas.zip", embedder=HashingEmbedder(dim=32))
    assert sorted(again.backend.partition("a").entities.entities()) == before  # type: ignore[union-attr]
    assert ("lake tahoe", 2) in before


def test_the_graph_view_draws_entities_with_a_legend() -> None:
    pytest.importorskip("pyvis")
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    from shared_core.apps.visual import graph_view, plot_graph

    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder(dim=32), config=ON)
    atlas.add_memories(["Caroline: we camped near Lake Tahoe.", "Melanie: Lake Tahoe was cold.",
                        "Melanie: the kids loved pottery."], namespace="a")
    view = graph_view(atlas, namespace="a")
    assert {(e.key, len(e.mentions)) for e in view.entities} == {("lake tahoe", 2), ("melanie", 2)}
    assert graph_view(atlas, namespace="a", max_entities=1).entities == view.entities[:1]
    assert graph_view(atlas, namespace="a", max_entities=0).entities == ()
    with pytest.raises(InvalidInputError, match="max_entities"):
        graph_view(atlas, namespace="a", max_entities=-1)
    page = atlas.to_html(namespace="a")
    assert "2 entities" in page and "entity</span>" in page and "mentions</span>" in page
    assert page.count('"shape": "diamond"') == 2 and page.count('"relation": "mentions"') == 4
    ax = plot_graph(view)
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "entity" in legend and "mentions" in legend and "2 entities" in ax.get_title()
