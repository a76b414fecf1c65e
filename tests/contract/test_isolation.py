"""The adversarial isolation tests of ``tests/unit/test_isolation.py``, on every backend: a secret
of namespace A never reaches namespace B through any query."""

from __future__ import annotations

from ..unit.test_isolation import (  # noqa: F401 - collected here with this suite's fixtures
    test_counts_and_stats_are_per_namespace,
    test_end_session_and_similarity_links_stay_inside,
    test_ids_of_another_namespace_are_unknown_when_a_namespace_is_given,
    test_no_edge_leads_across,
    test_other_sessions_only_when_asked_and_labelled,
    test_retrieve_and_context_never_cross,
    two_tenants,
)
