"""Time cues: which range a query names, relative to a reference time."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from shared_core.formulas.timecues import TimeCue, parse_time_cue

NOW = datetime(2024, 6, 15, 12, tzinfo=UTC).timestamp()  # a Saturday


def days(cue: TimeCue | None) -> tuple[str, str]:
    assert cue is not None
    fmt = "%Y-%m-%d"
    return (datetime.fromtimestamp(cue.start, UTC).strftime(fmt),
            datetime.fromtimestamp(cue.end, UTC).strftime(fmt))


@pytest.mark.parametrize(("query", "start", "end"), [
    ("What dish did Nate make on 9 November, 2022?", "2022-11-09", "2022-11-10"),
    ("What did Tim say on 8th December, 2023?", "2023-12-08", "2023-12-09"),
    ("What did Joanna do on October 25, 2022?", "2022-10-25", "2022-10-26"),
    ("Where was the picture shared on December 1,2023 taken?", "2023-12-01", "2023-12-02"),
    ("notes from 2023-05-08 please", "2023-05-08", "2023-05-09"),
    ("Where was John between August 11 and August 15 2023?", "2023-08-11", "2023-08-16"),
    ("what happened between 3 May 2023 and 9 June 2023", "2023-05-03", "2023-06-10"),
    ("from March 3 to March 9, 2023", "2023-03-03", "2023-03-10"),
    ("Where was Tim in the week before 16 November 2023?", "2023-11-09", "2023-11-17"),
    ("what did we plan two days after 1 May 2024", "2024-05-01", "2024-05-04"),
    ("What instrument is Tim learning in December 2023?", "2023-12-01", "2024-01-01"),
    ("Which city did John recommend in January 2024?", "2024-01-01", "2024-02-01"),
    ("How many times did she go to the beach in 2023?", "2023-01-01", "2024-01-01"),
    ("what did I do yesterday?", "2024-06-14", "2024-06-15"),
    ("what did we discuss last weekend?", "2024-06-08", "2024-06-10"),
    ("what did she say three days ago", "2024-06-11", "2024-06-14"),
])
def test_explicit_and_relative_cues(query: str, start: str, end: str) -> None:
    assert days(parse_time_cue(query, now=NOW)) == (start, end)


@pytest.mark.parametrize("query", [
    "What milk do I like?",
    "May I ask what you prefer?",  # "may" the verb
    "the march of progress",  # "march" the noun
    "we met 25 people",
    "What happened before the trip?",  # an event, not a date
    "between us and them",
])
def test_no_cue(query: str) -> None:
    assert parse_time_cue(query, now=NOW) is None


def test_a_missing_year_is_floating_and_placed_in_the_latest_such_period() -> None:
    may = parse_time_cue("what did we discuss in May?", now=NOW)
    assert may is not None and may.floating and days(may) == ("2024-05-01", "2024-06-01")
    july = parse_time_cue("what happened in July?", now=NOW)  # July 2024 is still ahead
    assert july is not None and days(july) == ("2023-07-01", "2023-08-01")
    aug = parse_time_cue("What did his teammates give him on Aug 15th?", now=NOW)
    assert aug is not None and aug.floating and days(aug) == ("2023-08-15", "2023-08-16")
    assert not parse_time_cue("in May 2023", now=NOW).floating  # type: ignore[union-attr]


def test_shifted_moves_whole_years_and_survives_leap_days() -> None:
    cue = TimeCue(datetime(2024, 2, 29, tzinfo=UTC).timestamp(), datetime(2024, 3, 1, tzinfo=UTC).timestamp(),
                  "on 29 February", floating=True)
    assert days(cue.shifted(-1)) == ("2023-02-28", "2023-03-01")
    assert cue.shifted(-1).floating


def test_an_explicit_period_beats_a_vague_one() -> None:
    cue = parse_time_cue("What charity event did John organize recently in 2024?", now=NOW)
    assert days(cue) == ("2024-01-01", "2025-01-01")
    recent = parse_time_cue("What did John recently get promoted to?", now=NOW)
    assert recent is not None and recent.label == "recently" and recent.contains(NOW - 86_400)


def test_impossible_dates_are_not_cues() -> None:
    assert parse_time_cue("on 31 February 2023", now=NOW) is None or days(
        parse_time_cue("on 31 February 2023", now=NOW)) == ("2023-02-01", "2023-03-01")


def test_the_prefilter_never_hides_a_cue() -> None:
    """The one-regex prefilter may let through queries with no cue, never drop one with a cue:
    on every question of the LoCoMo development split (when present) and on generated phrases,
    the full parser finds a cue only where the prefilter lets the query through."""
    from pathlib import Path

    from shared_core.formulas.timecues import _RE_ANY, _RE_ANY_ASCII, _parse

    queries = [f"{n} {unit}{s} ago" for n in ("3", "a", "two", "few") for unit in ("day", "week", "month", "year")
               for s in ("", "s")]
    queries += [f"{w} {u}" for w in ("last", "this", "past", "previous") for u in ("day", "week", "weekend", "month")]
    queries += ["yesterday", "Tonight?", "this morning", "RECENTLY", "these  days", "lately", "in Sept",
                "on 9 nov", "the fortnight after 3 May", "2024-01-02", "in 2021"]
    data = Path(__file__).resolve().parents[3] / "shared" / "data" / "locomo" / "locomo_dev.json"
    if data.exists():
        import json

        queries += [str(q["question"]) for conv in json.loads(data.read_text()) for q in conv["qa"]]
    found = 0
    for query in queries:
        if query.isascii():  # the lowercased form's search, case by case the same
            assert (_RE_ANY_ASCII.search(query.lower()) is None) == (_RE_ANY.search(query) is None), query
        cue = _parse(query, NOW)
        if cue is not None:
            found += 1
            assert _RE_ANY.search(query) is not None, query
            assert parse_time_cue(query, now=NOW) == cue
    assert found >= 40


@pytest.mark.parametrize(("query", "start", "end"), [
    ("what did we talk about last week?", "2024-06-03", "2024-06-10"),  # Monday to Sunday before this week
    ("anything from the previous week", "2024-06-03", "2024-06-10"),
    ("what did I buy last month", "2024-05-01", "2024-06-01"),
    ("where did we travel last year", "2023-01-01", "2024-01-01"),
])
def test_last_names_the_previous_calendar_period(query: str, start: str, end: str) -> None:
    assert days(parse_time_cue(query, now=NOW)) == (start, end)


@pytest.mark.parametrize("now", [NOW, datetime(2024, 6, 10, 0, 30, tzinfo=UTC).timestamp(),  # Monday, 00:30
                                 datetime(2024, 6, 16, 23, tzinfo=UTC).timestamp()])  # Sunday night
def test_last_week_never_includes_today(now: float) -> None:
    cue = parse_time_cue("what happened last week", now=now)
    assert cue is not None and not cue.contains(now) and cue.end - cue.start == 7 * 86_400
    midnight = datetime.fromtimestamp(now, UTC).replace(hour=0, minute=0).timestamp()
    assert cue.end <= midnight and not cue.contains(midnight)


def test_past_and_this_week_are_the_seven_days_up_to_now() -> None:
    for query in ("what did we do this week", "anything in the past week"):
        cue = parse_time_cue(query, now=NOW)
        assert cue is not None and cue.contains(NOW) and cue.start == NOW - 7 * 86_400
