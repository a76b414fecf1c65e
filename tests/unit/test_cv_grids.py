"""The cross-validation grids of ``benchmarks/_cv.py`` (``locomo_recall.py --cv --grid NAME``): each
grid starts at the shipped preset, every field it varies is part of the answers' cache key (else two
points would share one point's answers), its levers hold values it has, ``--grid`` offers
exactly `_cv.GRIDS`, and a context's evidence is counted as ``locomo_recall.py`` counts it."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from shared_core import AtlasConfig

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

import _cv  # noqa: E402
import locomo_recall  # noqa: E402

#: fields a context's cache key holds through `shared_core.engine.context.context_breadth`
_BREADTH_FIELDS = {"list_diversity", "list_candidates"}


@pytest.mark.parametrize("name", list(_cv.GRIDS))
def test_a_grid_starts_at_the_presets_and_varies_query_time_fields(name: str) -> None:
    grid, levers = _cv.GRIDS[name]
    preset = AtlasConfig.archive()
    assert _cv.grid_points(grid)[0] == {field: getattr(preset, field) for field, _ in grid}
    for field, values in grid:
        assert len(set(values)) == len(values), field
        assert field in set(_cv.RETRIEVAL_FIELDS) | set(_cv.CONTEXT_FIELDS) | _BREADTH_FIELDS, field
        preset.replace(**{field: values[-1]})  # every value is a valid config
        if field in _cv._OFF:
            assert set(_cv._OFF[field]) <= set(values), field
    fields = dict(grid)
    applied = {lever: hold for lever, hold in levers.items() if set(hold) <= set(fields)}  # as `_cv.ablations`
    assert applied
    for lever, hold in applied.items():
        assert all(set(v) <= set(fields[field]) for field, v in hold.items()), lever


def test_the_fusion_grids_key_each_point_apart() -> None:
    points = _cv.grid_points(_cv.FUSION_GRID)
    assert [name for name, _ in _cv.FUSION_GRID] == ["keyword_weight", "graph_weight", "time_weight"]
    assert len({_cv._cache_key(p) for p in points}) == len(points) == 27
    for grid, size in ((_cv.FUSION_FINE_GRID, 27), (_cv.FUSION_SCALE_GRID, 9)):
        others = _cv.grid_points(grid)
        assert len({_cv._cache_key(p) for p in others}) == len(others) == size


@pytest.mark.parametrize("name", list(_cv.GRIDS))
def test_the_command_line_offers_every_grid(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        locomo_recall.main(["--cv", "--grid", name, "--data", str(BENCH / "no-such-file.json")])
    assert "no data at" in capsys.readouterr().err  # the grid was accepted; the data was not found


def test_the_command_line_refuses_an_unknown_grid(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        locomo_recall.main(["--cv", "--grid", "nope"])
    assert "invalid choice" in capsys.readouterr().err


def test_a_context_counts_a_message_shown_without_its_label() -> None:
    """A turn cut into messages (``--split-messages``): the timeline shows the messages after the
    first without the speaker's label again; each is still counted as in the context."""
    from _baselines import VectorCache
    from _locomo import Conversation, Question, Turn, split_messages

    from shared_core import HashingEmbedder

    texts = ("I went swimming in the lake. The water was cold. We saw a heron there.",
             "That sounds lovely! Herons are shy birds.", "We also had a picnic with sandwiches.",
             "Nice, what kind of sandwiches did you bring?")
    turns = tuple(Turn(f"D1:{i + 1}", 1, ("Ann", "Bob")[i % 2], text, None, "8 May 2023", 1.68e9 + 60 * i)
                  for i, text in enumerate(texts))
    question = Question("Where did Ann go swimming, was the water cold, and what bird did she see?", 1,
                        frozenset({"D1:1"}))
    conv = split_messages(Conversation("tiny", turns, (question,), 0))
    assert len(conv.questions[0].evidence) == 3  # D1:1.0, D1:1.1, D1:1.2: two shown without a label
    embedder = HashingEmbedder()
    scores = _cv.run_grid([conv], base=AtlasConfig.archive(), cache=VectorCache(embedder), embedder=embedder,
                          now=locomo_recall.NOW, grid=(("context_neighbours", (12,)),))
    [(_, row)] = scores.atlas[0]["tiny"]
    assert row["R@1000tok"] == row["R@2000tok"] == 1.0  # the whole chat fits: every message is in
    assert scores.over_budget == 0


def _fun_chat() -> object:
    """A chat where a question about Jon and Gina finds their own turns only through the speaker
    path (a third speaker's turns name them both), as in ``tests/unit/test_subqueries.py``."""
    from _locomo import Conversation, Question, Turn

    lines = [*(("Tim", f"Jon, Gina! What do Jon and Gina do for fun, Jon and Gina? day {i}") for i in range(3)),
             ("Jon", "Gina, what do Jon and Gina do for fun?"), ("Gina", "what do Gina and Jon do for fun, Jon?"),
             ("Jon", "dancing, so much fun"), ("Gina", "painting is fun"),
             *(("Tim", f"said hello on day {i}") for i in range(8))]
    turns = tuple(Turn(f"D1:{i + 1}", 1, who, text, None, "8 May 2023", 1.68e9 + 60 * i)
                  for i, (who, text) in enumerate(lines))
    question = Question("what do jon and gina do for fun?", 1, frozenset({"D1:6", "D1:7"}))  # typed in lower case
    return Conversation("fun", turns, (question,), 0)


def _fun_grid(points: list[dict[str, object]] | None = None) -> _cv.CVScores:
    from _baselines import VectorCache

    from shared_core import HashingEmbedder

    embedder = HashingEmbedder(dim=256)
    base = AtlasConfig.archive(similar_top=0, link_temporal=False, candidate_min=4, candidate_ratio=1.0,
                               feedback_weight=0.0, speaker_min_k=0, speaker_weight=2.0)
    return _cv.run_grid([_fun_chat()], base=base, cache=VectorCache(embedder),  # type: ignore[list-item]
                        embedder=embedder, now=locomo_recall.NOW, grid=(("speaker_weight", (2.0, 0.0)),),
                        points=points)


def test_a_grid_point_knows_the_speakers_a_lower_case_question_names() -> None:
    """Each grid point is a new atlas over the ingesting atlas's backend: it adopts that backend's
    memories (`Lifecycle.adopt`) and learns their speakers, so a question typed in lower case
    ("jon", "gina") runs the speaker path there as it does in ``locomo_recall.py``
    (``robustness.py``'s ``real_chat`` asks so)."""
    scores = _fun_grid()
    [(_, with_path)] = scores.atlas[0]["fun"]
    [(_, without)] = scores.atlas[1]["fun"]
    assert with_path["R@5"] == 1.0  # both speakers' own turns, through the speaker path
    assert without["R@5"] < 1.0


def test_a_grid_scores_the_points_it_is_given() -> None:
    scores = _fun_grid([{"speaker_weight": 0.0}])
    assert scores.points == [{"speaker_weight": 0.0}]
    [(_, row)] = scores.atlas[0]["fun"]
    assert row["R@5"] < 1.0  # the point given (no speaker path), not the grid's first (2.0)


def _row(conv: str, group: str, scores: tuple[float, float]) -> dict[str, object]:
    return {"conv": conv, "question": "?", "category": "single-hop", "aggregate": group,
            "metrics": [{"R@10": s, "R@1000tok": s, "R@2000tok": s} for s in scores]}


def test_a_point_per_group_is_chosen_without_the_held_out_conversation() -> None:
    """``graph_kind_diagnosis.by_group_cv``: each held-out conversation's questions of a group are
    scored at the point that group's questions of the other conversations prefer, never at the
    one its own questions prefer."""
    from graph_kind_diagnosis import by_group_cv

    rows = [_row(c, "aggregate", (0.5, 0.9)) for c in ("a", "b", "c")]  # lists want point 1
    rows += [_row(c, "single", (0.8, 0.6)) for c in ("a", "a", "a", "b", "b", "b", "c")]  # single facts: 0
    rows += [_row("c", "single", (0.4, 1.0))]  # c's own single facts would choose point 1
    scored, chosen = by_group_cv(rows, "aggregate")
    assert chosen == ["a/aggregate: 1", "a/single: 0", "b/aggregate: 1", "b/single: 0",
                      "c/aggregate: 1", "c/single: 0"]
    assert sorted(r["R@10"] for r in scored) == [0.4, *[0.8] * 7, 0.9, 0.9, 0.9]
    one, picks = by_group_cv(rows, None)  # one point for all: lists and single facts alike
    assert len(one) == len(rows) and all(p.endswith(": 0") or p.endswith(": 1") for p in picks)


def test_runs_loaded_side_by_side_keep_each_questions_metrics_in_order() -> None:
    """``graph_kind_diagnosis.merge``: two runs' points side by side, tagged, on the questions
    both hold; runs of other questions are refused."""
    from graph_kind_diagnosis import merge, points_table

    first = {"points": [{}, {"graph_weight": 1.4}],
             "sets": {"dev": [_row("a", "single", (0.5, 0.6)), _row("b", "single", (0.7, 0.8))],
                      "split": [_row("a", "single", (0.1, 0.2))]}}
    second = {"points": [{}], "sets": {"dev": [_row("a", "single", (0.9,)), _row("b", "single", (0.3,))]}}
    merged = merge([first, second], ["base", "patched"])
    assert list(merged["sets"]) == ["dev"]  # the sets both hold
    assert merged["points"] == [{"run": "base"}, {"run": "base", "graph_weight": 1.4}, {"run": "patched"}]
    assert [[m["R@10"] for m in r["metrics"]] for r in merged["sets"]["dev"]] == [[0.5, 0.6, 0.9], [0.7, 0.8, 0.3]]
    assert first["sets"]["dev"][0]["metrics"] == [_row("a", "single", (0.5, 0.6))["metrics"][0],
                                                 _row("a", "single", (0.5, 0.6))["metrics"][1]]  # not changed
    assert "| run=patched | 0.600 |" in points_table("dev", merged["sets"]["dev"], merged["points"])
    other = {"points": [{}], "sets": {"dev": [_row("b", "single", (0.9,)), _row("a", "single", (0.3,))]}}
    with pytest.raises(SystemExit):
        merge([first, other])
