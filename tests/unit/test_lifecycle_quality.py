"""The lifecycle's quality on the labelled sets of ``benchmarks/data`` (issue 25): the LLM-free
contradiction rule, the write filter and eviction under a cap hold their targets, and the
issue's own examples come out right."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from shared_core import AtlasConfig, importance_score
from shared_core.engine.lifecycle.contradiction import value_conflict

DATA = Path(__file__).resolve().parents[2] / "benchmarks" / "data"


def _rows(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines() if line.strip()]


def _precision_recall(pred: list[bool], gold: list[bool]) -> tuple[float, float]:
    tp = sum(p and g for p, g in zip(pred, gold, strict=True))
    return tp / max(1, sum(pred)), tp / max(1, sum(gold))


@pytest.mark.parametrize(("old", "new", "kind"), [
    ("Bob's birthday is on June 3", "Bob's birthday is on July 9", "date"),
    ("I am 34 years old", "I am 35 years old", "number"),
    ("Maya lives in New York", "Maya lives in San Francisco", "value"),
    ("Tom likes spicy food", "Tom doesn't like spicy food", "negation"),
    ("I smoke", "I never smoke", "negation"),
])
def test_the_issues_missed_contradictions_are_caught(old: str, new: str, kind: str) -> None:
    conflict = value_conflict(new, old)
    assert conflict is not None and conflict.kind == kind


@pytest.mark.parametrize(("old", "new"), [
    ("The meeting is at 3pm", "The meeting is not at 5pm"),  # says two compatible things
    ("The meeting is not at 5pm", "The meeting is not at 3pm"),
    ("The meeting is at 5pm", "The meeting is at 17:00"),  # one time, two spellings (dateutil)
    ("I have two cats", "I have 2 cats"),
    ("My shoe size is 42", "My son's shoe size is 44"),  # another subject
    ("We watched a movie on Friday", "We watched a movie on Saturday"),  # two events
])
def test_look_alikes_are_not_contradictions(old: str, new: str) -> None:
    assert value_conflict(new, old) is None


@pytest.mark.parametrize("name", ["contradictions.jsonl", "contradictions_holdout.jsonl"])
def test_the_rule_meets_its_targets_on_the_labelled_pairs(name: str) -> None:
    rows = _rows(name)
    assert len(rows) >= 60 and {r["label"] for r in rows} == {True, False}
    pred = [value_conflict(r["new"], r["old"]) is not None for r in rows]
    precision, recall = _precision_recall(pred, [r["label"] for r in rows])
    assert precision >= 0.90 and recall >= 0.80, (precision, recall)


def test_a_fact_about_the_user_passes_the_write_filter(make_atlas: Any) -> None:
    atlas = make_atlas(write_filter=True)
    assert atlas.add_memory("User owns a dog", namespace="u").kind == "memory"
    assert atlas.add_memory("I'm a nurse", namespace="u").kind == "memory"
    assert atlas.add_memory("could you repeat that?", namespace="u").kind == "working"


@pytest.mark.parametrize("name", ["write_filter.jsonl", "write_filter_holdout.jsonl"])
def test_the_write_filter_meets_its_targets_on_the_labelled_turns(name: str) -> None:
    rows = _rows(name)
    threshold = AtlasConfig().write_threshold
    facts = [importance_score(r["text"]) >= threshold for r in rows if r["label"] == "fact"]
    talk = [importance_score(r["text"]) < threshold for r in rows if r["label"] == "small_talk"]
    assert len(facts) >= 50 and len(talk) >= 50
    assert sum(facts) / len(facts) >= 0.95 and sum(talk) / len(talk) >= 0.80, (sum(facts), sum(talk))
