"""The notebook views: a self-contained interactive page, static plots, tables."""

from __future__ import annotations

import re

import pytest

from shared_core import ElasticMemoryAtlas, InvalidInputError

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


@pytest.fixture
def small(atlas: ElasticMemoryAtlas) -> ElasticMemoryAtlas:
    atlas.add_memories(["the cat sat on the mat", "the cat chased a mouse", "a mouse ate the cheese"],
                       namespace="u", session_id="s1")
    pinned = atlas.add_memory("<script>alert('x')</script> & friends", namespace="u", session_id="s2", pinned=True)
    atlas.add_memory("other tenant's note", namespace="v")
    atlas.link(pinned.id, atlas.memories(namespace="u")[0].id, relation="caused_by")
    return atlas


def test_page_is_self_contained_and_draws_every_node(small: ElasticMemoryAtlas, tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "atlas.html"
    page = small.to_html(path, namespace="u")
    assert path.read_text(encoding="utf-8") == page
    assert not re.search(r"<(script|link|img)[^>]+(src|href)=", page)  # nothing fetched from anywhere
    assert "vis.Network" in page and "4 memories" in page
    data = re.search(r"const data = (\{.*?\});\n", page, re.S)
    assert data is not None
    payload = data.group(1)
    assert payload.count('"id":') == 4 and "other tenant" not in payload  # one namespace only
    assert "caused_by (1.00)" in payload
    assert "<script>alert" not in payload  # user text cannot close the script element


def test_colour_by_type_and_validation(small: ElasticMemoryAtlas) -> None:
    page = small.to_html(namespace="u", color_by="type")
    assert "colour by type" in page
    with pytest.raises(InvalidInputError, match="rainbow"):
        small.to_html(color_by="rainbow")


def test_notebook_repr_is_an_iframe(small: ElasticMemoryAtlas) -> None:
    html = small._repr_html_()
    assert html.startswith("<iframe srcdoc=") and "&lt;!DOCTYPE html&gt;" in html
    stats = small.stats()._repr_html_()
    assert "<table>" in stats and "memories" in stats


def test_static_plots(small: ElasticMemoryAtlas) -> None:
    ax = small.plot(namespace="u")
    assert "4 memories" in ax.get_title()
    axes = small.plot_weights()
    assert "half-life 30 days" in axes[1].get_title()
    assert sum(p.get_height() for p in axes[0].patches) == 5


def test_static_graph_has_labels_and_legends(small: ElasticMemoryAtlas) -> None:
    ax = small.plot(namespace="u")
    texts = [t.get_text() for t in ax.texts]
    assert "the cat sat on the mat" in texts  # small graphs are labelled
    legends = [c for c in ax.get_children() if type(c).__name__ == "Legend"]
    titles = {lg.get_title().get_text() for lg in legends}
    assert titles == {"session", "edges"}
    edges = next(lg for lg in legends if lg.get_title().get_text() == "edges")
    assert "caused_by" in [t.get_text() for t in edges.get_texts()]
    from shared_core.apps.visual import graph_view, plot_graph

    assert len(plot_graph(graph_view(small, namespace="u"), labels=False).texts) == 0


def test_stats_html_is_a_real_table(small: ElasticMemoryAtlas) -> None:
    html = small.stats()._repr_html_()
    assert "<td style='padding:1px 8px;text-align:left'>memories</td>" in html
    assert "weight histogram" in html and html.count("background:#4e79a7") == 9  # one bar per bin
    assert "edges caused_by" in html and "padding-left:22px" in html  # breakdowns indented, not cut


def test_sessions_of_different_namespaces_get_different_colours(atlas: ElasticMemoryAtlas) -> None:
    atlas.add_memory("alice on monday", namespace="alice", session_id="monday")
    atlas.add_memory("bob on monday", namespace="bob", session_id="monday")
    assert "alice · monday" in atlas.to_html() and "bob · monday" in atlas.to_html()
    assert "alice · monday" not in atlas.to_html(namespace="alice")  # one namespace: the session alone
