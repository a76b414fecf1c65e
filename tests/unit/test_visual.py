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
    assert small.to_html(path, namespace="u") == path  # the path, as save returns it
    page = path.read_text(encoding="utf-8")
    assert small.to_html(namespace="u") == page  # no path: the page itself
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
    assert "DecompressionStream" in html and "vis.Network" in html
    # the library travels compressed: a notebook output is well under half the page
    assert len(html) < 0.45 * len(small.to_html()), (len(html), len(small.to_html()))
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


def test_the_compressed_library_unpacks_to_the_same_code() -> None:
    import base64
    import gzip

    from shared_core.engine.views import _vis_js, _vis_js_packed

    assert gzip.decompress(base64.b64decode(_vis_js_packed())).decode("utf-8") == _vis_js()


def _payload(page: str) -> dict[str, object]:
    import json

    data = re.search(r"const data = (\{.*?\});\n", page, re.S)
    assert data is not None
    return json.loads(data.group(1))  # type: ignore[no-any-return]


def test_page_has_an_edge_legend_and_draws_superseded_versions_apart(atlas: ElasticMemoryAtlas) -> None:
    old = atlas.add_memory("User prefers oat milk", namespace="u")
    new = atlas.update_memory(old.id, "User now prefers soy milk", namespace="u")
    page = atlas.to_html(namespace="u")
    header = page[page.index("<header>"):page.index("</header>")]
    assert "edges:" in header and "supersedes" in header and "superseded version" in header
    payload = _payload(page)
    nodes = {n["id"]: n for n in payload["nodes"]}  # type: ignore[attr-defined]
    assert nodes[old.id].get("superseded") is True and nodes[old.id]["label"].startswith("(superseded)")
    assert nodes[old.id]["shapeProperties"] == {"borderDashes": [4, 3]}
    assert "superseded" not in nodes[new.id]
    between = [e for e in payload["edges"] if {e["from"], e["to"]} == {old.id, new.id}]  # type: ignore[attr-defined]
    assert {e["relation"] for e in between} >= {"supersedes", "similar_to"}
    shapes = [json_key(e["smooth"]) for e in between]
    assert len(set(shapes)) == len(between)  # no two edges between the same memories share a path


def json_key(value: object) -> str:
    import json

    return json.dumps(value, sort_keys=True)


def test_page_fills_the_window(small: ElasticMemoryAtlas) -> None:
    page = small.to_html()
    assert "html, body { height: 100%;" in page and "#graph { flex: 1 1 auto;" in page
    assert "height: 560px" not in page
