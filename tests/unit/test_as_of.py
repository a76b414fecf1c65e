"""Valid time: ``valid_from`` on write and ``as_of`` recall from the versions valid then."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime

import pytest

from shared_core import ElasticMemoryAtlas, InvalidInputError, ManualClock

Make = Callable[..., ElasticMemoryAtlas]
DAY = 86_400.0


def at(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


def test_valid_from_is_stored_and_defaults_to_the_write_time(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    given = atlas.add_memory("Alice lives in Paris", namespace="u", valid_from=at("2023-01-01"))
    assert given.valid_from == at("2023-01-01").timestamp()
    plain = atlas.add_memory("Bob lives in Rome", namespace="u")
    assert plain.valid_from == clock.now()
    batch = atlas.add_memories([{"content": "Carol lives in Oslo", "valid_from": "2022-05-01T00:00:00"}],
                               namespace="u")
    assert batch[0].valid_from == at("2022-05-01").timestamp()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), "not a date", True, [1.0]])
def test_a_bad_valid_from_or_as_of_is_refused_and_changes_nothing(atlas: ElasticMemoryAtlas, bad: object) -> None:
    with pytest.raises(InvalidInputError):
        atlas.add_memory("x", namespace="u", valid_from=bad)
    with pytest.raises(InvalidInputError):
        atlas.add_memories(["y", {"content": "z", "valid_from": bad}], namespace="u")
    assert atlas.count(namespace="u") == 0
    atlas.add_memory("w", namespace="u")
    with pytest.raises(InvalidInputError):
        atlas.retrieve("w", namespace="u", as_of=bad)
    with pytest.raises(InvalidInputError):
        atlas.build_context("w", namespace="u", token_budget=50, as_of=bad)


def test_as_of_answers_from_the_version_valid_then(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    clock.set(at("2024-04-01"))
    paris = atlas.add_memory("Alice lives in Paris", namespace="u")
    clock.set(at("2024-06-01"))
    berlin = atlas.update_memory(paris.id, "Alice lives in Berlin")
    clock.set(at("2024-07-01"))
    atlas.add_memory("Alice adopted a cat named Miso", namespace="u")

    def ids(**kw: object) -> list[str]:
        return [h.node.id for h in atlas.retrieve("where does Alice live", namespace="u", top_k=5,
                                                  reinforce=False, **kw)]  # type: ignore[arg-type]

    may = ids(as_of=at("2024-05-01"))
    assert paris.id in may and berlin.id not in may and len(may) == 1  # superseded after May: still valid then
    assert berlin.id in ids(as_of=at("2024-06-15")) and paris.id not in ids(as_of=at("2024-06-15"))
    assert ids(as_of=at("2024-03-01")) == []  # nothing was written yet
    assert paris.id not in ids() and berlin.id in ids()  # without as_of: today
    ctx = atlas.build_context("where does Alice live", namespace="u", token_budget=200, as_of=at("2024-05-01"),
                              reinforce=False)
    assert "Paris" in ctx.text and "Berlin" not in ctx.text and "Miso" not in ctx.text


def test_update_with_valid_from_ends_the_old_version_then(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    old = atlas.add_memory("The office is on Elm Street", namespace="u", valid_from=at("2020-01-01"))
    new = atlas.update_memory(old.id, "The office is on Oak Avenue", valid_from=at("2021-03-01"))
    assert atlas.get(old.id).valid_to == new.valid_from == at("2021-03-01").timestamp()
    hits = atlas.retrieve("office street", namespace="u", as_of=at("2020-06-01"), reinforce=False)
    assert [h.node.id for h in hits] == [old.id]
    hits = atlas.retrieve("office street", namespace="u", as_of=at("2022-01-01"), reinforce=False)
    assert [h.node.id for h in hits] == [new.id]
    with pytest.raises(InvalidInputError):  # a correction cannot start before what it corrects
        atlas.update_memory(new.id, "The office is on Pine Road", valid_from=at("2019-01-01"))
    assert len(atlas.history(new.id)) == 2


def test_as_of_working_memory_shows_only_the_turns_valid_then(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    clock.set(at("2024-05-01"))
    atlas.add_memory("We planned the trip to Lisbon", namespace="u", session_id="s")
    clock.set(at("2024-05-03"))
    atlas.add_memory("We cancelled the trip to Lisbon", namespace="u", session_id="s")
    ctx = atlas.build_context("trip", namespace="u", session_id="s", token_budget=200, as_of=at("2024-05-02"),
                              reinforce=False)
    assert "planned" in ctx.text and "cancelled" not in ctx.text
