"""Pseudo-relevance feedback's parts (`shared_core.engine.feedback`): the RM3 expansion words and
the config fields; the second round itself is in tests/contract/test_feedback.py."""

from __future__ import annotations

import pytest

from shared_core import AtlasConfig, InvalidInputError
from shared_core.engine.feedback import rm3_terms


def test_expansion_words_weigh_frequency_by_relevance_and_leave_the_query_out() -> None:
    docs = [("Melanie: we went camping with the kids at the lake", 1.0),
            ("Melanie: the kids loved the camping trip, camping is our thing", 0.5)]
    # "Melanie" is the query's; "the", "we", "is" are filler; camping: 1/10 + 0.5 * 2/11
    assert rm3_terms(docs, "What does Melanie do?", 3) == ["camping", "kids", "went"]
    assert rm3_terms(docs, "Where did Melanie go camping?", 1) == ["kids"]  # a query stem ("camp") is out
    assert rm3_terms(docs, "x", 0) == []
    assert rm3_terms([("2023 9 am", 1.0)], "x", 3) == []  # digits and one-letter words are never topics


def test_a_feedback_document_with_no_relevance_adds_nothing() -> None:
    assert rm3_terms([("camping trip", 0.0), ("painting class", 1.0)], "x", 4) == ["painting", "class"]


@pytest.mark.parametrize(("field", "value"), [
    ("feedback_weight", -0.1), ("feedback_beta", float("nan")), ("feedback_docs", -1), ("feedback_docs", 2.5),
    ("feedback_terms", True), ("feedback_terms", -3),
    ("feedback_min_k", -1), ("feedback_min_k", None),
])
def test_feedback_fields_are_validated(field: str, value: object) -> None:
    with pytest.raises(InvalidInputError, match=field):
        AtlasConfig(**{field: value})


def test_feedback_is_on_for_wide_recalls_by_default() -> None:
    for config in (AtlasConfig(), AtlasConfig.archive()):
        assert (config.feedback_weight, config.feedback_docs, config.feedback_min_k) == (0.5, 5, 40)
