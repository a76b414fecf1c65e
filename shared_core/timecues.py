"""Time cues in a query: "yesterday", "last week", "in May", "in 2023", "3 days ago".

`parse_time_cue` turns a query into the time range it names (POSIX seconds, UTC), relative to a
reference time, or None. Hand-written because the libraries that parse dates (dateparser,
parsedatetime) parse a date *string*, not a cue buried in a question, and pull in heavy data.

>>> from datetime import datetime, timezone
>>> now = datetime(2024, 6, 15, 12, tzinfo=timezone.utc).timestamp()
>>> cue = parse_time_cue("what did we discuss in May?", now=now)
>>> datetime.fromtimestamp(cue.start, timezone.utc).date(), cue.label
(datetime.date(2024, 5, 1), 'in may')
>>> parse_time_cue("what milk do I like?", now=now) is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["TimeCue", "parse_time_cue"]

_MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september",
     "october", "november", "december"])}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
        "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2}

_MONTH_RE = "|".join(sorted(_MONTHS, key=len, reverse=True))
_RE_MONTH = re.compile(rf"\b(?:in|during|on|of|since|early|late|mid)?\s*({_MONTH_RE})\b\.?(?:\s*,?\s*(\d{{4}}))?",
                       re.IGNORECASE)
_RE_YEAR = re.compile(r"\b(?:in|during|of|since)\s+((?:19|20)\d{2})\b", re.IGNORECASE)
_RE_AGO = re.compile(r"\b(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of)\s+"
                     r"(day|week|month|year)s?\s+ago\b", re.IGNORECASE)
_RE_LAST = re.compile(r"\b(last|this|past|previous)\s+(day|week|month|year|weekend)\b", re.IGNORECASE)
_RE_DAYWORD = re.compile(r"\b(yesterday|today|tonight|this morning|recently|lately)\b", re.IGNORECASE)
# "may" is also a verb: only read it as a month next to a preposition or a year.
_AMBIGUOUS = {"may", "march", "sept", "jan", "mar", "jun", "jul", "aug", "oct", "nov", "dec",
              "apr", "feb", "sep"}


@dataclass(frozen=True, slots=True)
class TimeCue:
    """A time range named by a query: ``start <= t < end`` (POSIX seconds)."""

    start: float
    end: float
    label: str

    def contains(self, ts: float) -> bool:
        return self.start <= ts < self.end


def _month_range(year: int, month: int) -> tuple[float, float]:
    start = datetime(year, month, 1, tzinfo=UTC)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)
    return start.timestamp(), end.timestamp()


def parse_time_cue(query: str, *, now: float) -> TimeCue | None:
    """The first time range that ``query`` names, relative to ``now``; None when it names none."""
    today = datetime.fromtimestamp(now, tz=UTC).replace(hour=0, minute=0, second=0,
                                                                  microsecond=0)
    m = _RE_DAYWORD.search(query)
    if m:
        word = m.group(1).lower()
        if word == "yesterday":
            start = today - timedelta(days=1)
            return TimeCue(start.timestamp(), today.timestamp(), "yesterday")
        if word in ("today", "tonight", "this morning"):
            return TimeCue(today.timestamp(), now + 1.0, word)
        return TimeCue(now - 14 * 86_400.0, now + 1.0, word)
    m = _RE_AGO.search(query)
    if m:
        raw = m.group(1).lower()
        n = int(raw) if raw.isdigit() else _NUM.get(raw, 1)
        days = n * _UNITS[m.group(2).lower()]
        center = now - days * 86_400.0
        slack = max(1.0, days * 0.5) * 86_400.0
        return TimeCue(center - slack, center + slack, m.group(0).lower())
    m = _RE_LAST.search(query)
    if m:
        which, unit = m.group(1).lower(), m.group(2).lower()
        if unit == "weekend":
            back = (today.weekday() - 5) % 7 or 7
            start = today - timedelta(days=back)
            return TimeCue(start.timestamp(), (start + timedelta(days=2)).timestamp(), m.group(0).lower())
        days = _UNITS[unit]
        if which == "this":
            return TimeCue(now - days * 86_400.0, now + 1.0, m.group(0).lower())
        return TimeCue(now - 2 * days * 86_400.0, now + 1.0, m.group(0).lower())
    for m in _RE_MONTH.finditer(query):
        name = m.group(1).lower()
        prefixed = m.group(0).strip().lower() != name
        if name in _AMBIGUOUS and not (prefixed or m.group(2)):
            continue
        if name == "may" and not m.group(2) and not re.match(r"(in|during|since|early|late|mid)\b",
                                                             m.group(0).strip().lower()):
            continue
        month = _MONTHS[name]
        reference = datetime.fromtimestamp(now, tz=UTC)
        year = int(m.group(2)) if m.group(2) else (
            reference.year if month <= reference.month else reference.year - 1)
        start_ts, end_ts = _month_range(year, month)
        return TimeCue(start_ts, end_ts, m.group(0).strip().lower())
    m = _RE_YEAR.search(query)
    if m:
        year = int(m.group(1))
        return TimeCue(datetime(year, 1, 1, tzinfo=UTC).timestamp(),
                       datetime(year + 1, 1, 1, tzinfo=UTC).timestamp(), m.group(0).lower())
    return None
