"""Time cues in a query: "on 9 November, 2022", "between August 11 and 15", "in May",
"the week before 16 Nov 2023", "last week", "3 days ago", "in 2023".

`parse_time_cue` turns a query into the time range it names (POSIX seconds, UTC), relative to a
reference time, or None. A cue whose year was not written (``"in May"``, ``"on Aug 15th"``) is
``floating``: it is placed in the latest such period up to the reference, and `recall` moves it
back a year at a time while it holds no memory. Hand-written because date libraries
(dateparser, parsedatetime) parse a date *string*, not a cue buried in a question, and pull in
heavy data.

>>> from datetime import datetime, timezone
>>> now = datetime(2024, 6, 15, 12, tzinfo=timezone.utc).timestamp()
>>> day = lambda ts: datetime.fromtimestamp(ts, timezone.utc).date().isoformat()
>>> cue = parse_time_cue("what did we discuss in May?", now=now)
>>> day(cue.start), day(cue.end), cue.label, cue.floating
('2024-05-01', '2024-06-01', 'in may', True)
>>> cue = parse_time_cue("What dish did Nate make on 9 November, 2022?", now=now)
>>> day(cue.start), day(cue.end)
('2022-11-09', '2022-11-10')
>>> cue = parse_time_cue("Where was John between August 11 and August 15 2023?", now=now)
>>> day(cue.start), day(cue.end)
('2023-08-11', '2023-08-16')
>>> parse_time_cue("what milk do I like?", now=now) is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

__all__ = ["TimeCue", "parse_time_cue"]

DAY = 86_400.0
_MONTH_NAMES = ["january", "february", "march", "april", "may", "june", "july", "august",
                "september", "october", "november", "december"]
_MONTHS = {m: i + 1 for i, m in enumerate(_MONTH_NAMES)}
_MONTHS.update({m[:3]: i for m, i in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_UNITS = {"day": 1, "week": 7, "weekend": 2, "fortnight": 14, "month": 30, "year": 365}
_NUM = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
        "seven": 7, "eight": 8, "nine": 9, "ten": 10, "few": 3, "couple of": 2, "the": 1}

_M = "|".join(sorted(_MONTHS, key=len, reverse=True))
_ORD = r"(?:st|nd|rd|th)?"
_YEAR = r"(?:19|20)\d{2}"
# "9 November, 2022", "8th December 2023", "25 Oct"
_DMY = rf"(?P<d1>\d{{1,2}}){_ORD}(?:\s+of)?\s+(?P<m1>{_M})\.?(?:,?\s*(?P<y1>{_YEAR}))?"
# "October 25, 2022", "December 1,2023", "Aug 15th", "May 8"
_MDY = rf"(?P<m2>{_M})\.?\s+(?P<d2>\d{{1,2}}){_ORD}(?!\d)(?:,?\s*(?P<y2>{_YEAR}))?"
_ISO = rf"(?P<iso>{_YEAR}-\d{{2}}-\d{{2}})"
_DATE = rf"(?:{_ISO}|{_DMY}|{_MDY})"
_RE_DATE = re.compile(rf"\b{_DATE}\b", re.IGNORECASE)
_RE_RANGE = re.compile(r"\b(?:between|from)\s+(?P<a>.+?)\s+(?:and|to|until|till|-)\s+(?P<b>.+?)(?=[?.!;]|,(?!\s*\d)|$)",
                       re.IGNORECASE)
_RE_RELATIVE_TO = re.compile(
    r"\b(?:the\s+)?(?:(?P<n>\d+|an?|one|two|three|four|five|six|seven|few|couple of)\s+)?"
    r"(?P<unit>day|week|weekend|fortnight|month)s?\s+(?P<dir>before|after|of)\s+(?P<rest>.+)",
    re.IGNORECASE)
_RE_MONTH = re.compile(rf"\b(?:(?P<prep>in|during|on|of|since|early|late|mid|around|by)\s+)?"
                       rf"(?P<m>{_M})\b\.?(?:,?\s*(?P<y>{_YEAR}))?", re.IGNORECASE)
_RE_YEAR = re.compile(rf"\b(?:in|during|of|since|around|by)\s+(?P<y>{_YEAR})\b", re.IGNORECASE)
_RE_AGO = re.compile(r"\b(\d+|an?|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of)\s+"
                     r"(day|week|month|year)s?\s+ago\b", re.IGNORECASE)
_RE_LAST = re.compile(r"\b(last|this|past|previous)\s+(day|week|month|year|weekend)\b", re.IGNORECASE)
_RE_DAYWORD = re.compile(r"\b(yesterday|today|tonight|this morning)\b", re.IGNORECASE)
_RE_VAGUE = re.compile(r"\b(recently|lately|these days)\b", re.IGNORECASE)
# Every cue above needs a month name, a year (19xx/20xx, which an ISO date starts with), a unit
# of time or one of the day and vague words (a bare number names no time: "we met 25 people"):
# one search for any of them lets the (many) queries that name no time skip the parsers.
_RE_ANY = re.compile(rf"(?:19|20)\d\d|\b(?:{_M}|(?:day|week(?:end)?|fortnight|month|year)s?|yesterday|today|"
                     r"tonight|morning|recently|lately|these\s+days)\b", re.IGNORECASE)
# the same on a lowercased ASCII query, where it means the same, in a fraction of the time
# (Python's `re` tries every case of every alternative)
_RE_ANY_ASCII = re.compile(_RE_ANY.pattern)
# Month names that are also English words: read them as months only next to a preposition, a
# day or a year ("may" is a verb, "march" a verb, "jan" a name).
_AMBIGUOUS = {"may", "march", "sept", "jan", "mar", "jun", "jul", "aug", "oct", "nov", "dec",
              "apr", "feb", "sep"}


@dataclass(frozen=True, slots=True)
class TimeCue:
    """A time range named by a query: ``start <= t < end`` (POSIX seconds).

    ``floating`` is True when the query left the year out, so the range may be moved back by
    whole years (`shifted`) to the latest one that holds memories.
    """

    start: float
    end: float
    label: str
    floating: bool = False

    def contains(self, ts: float) -> bool:
        return self.start <= ts < self.end

    def shifted(self, years: int) -> TimeCue:
        """The same calendar range ``years`` years later (earlier when negative)."""
        def move(ts: float) -> float:
            d = datetime.fromtimestamp(ts, tz=UTC)
            try:
                return d.replace(year=d.year + years).timestamp()
            except ValueError:  # 29 February
                return d.replace(year=d.year + years, day=28).timestamp()

        return replace(self, start=move(self.start), end=move(self.end))


def _ts(year: int, month: int, day: int = 1) -> float:
    return datetime(year, month, day, tzinfo=UTC).timestamp()


def _month_range(year: int, month: int) -> tuple[float, float]:
    return _ts(year, month), _ts(year + (month == 12), month % 12 + 1)


def _latest_year(month: int, day: int, reference: datetime) -> int:
    """The year of the latest (month, day) at or before the reference date."""
    return reference.year if (month, day) <= (reference.month, reference.day) else reference.year - 1


def _date(match: re.Match[str], reference: datetime, year: int | None = None
          ) -> tuple[float, bool] | None:
    """The start of the day a date match names, and whether its year was guessed."""
    g = match.groupdict()
    try:
        if g.get("iso"):
            d = datetime.fromisoformat(g["iso"]).replace(tzinfo=UTC)
            return d.timestamp(), False
        month = _MONTHS[(g.get("m1") or g["m2"]).lower()]
        day = int(g.get("d1") or g["d2"])
        written = g.get("y1") or g.get("y2")
        if written:
            return _ts(int(written), month, day), False
        guessed = year if year is not None else _latest_year(month, day, reference)
        return _ts(guessed, month, day), True
    except (ValueError, KeyError):  # "31 February", "99 May"
        return None


def _first_date(text: str, reference: datetime, year: int | None = None
                ) -> tuple[float, bool, str] | None:
    for m in _RE_DATE.finditer(text):
        parsed = _date(m, reference, year)
        if parsed is not None:
            return parsed[0], parsed[1], m.group(0)
    return None


def _range(query: str, reference: datetime) -> TimeCue | None:
    m = _RE_RANGE.search(query)
    if not m:
        return None
    second = _first_date(m.group("b"), reference)
    if second is None and (day := re.fullmatch(r"(\d{1,2})" + _ORD + r"(?:,?\s*(" + _YEAR + "))?",
                                              m.group("b").strip(), re.IGNORECASE)):
        first_only = _first_date(m.group("a"), reference)  # "between August 11 and 15"
        if first_only is None:
            return None
        start_day = datetime.fromtimestamp(first_only[0], tz=UTC)
        year = int(day.group(2)) if day.group(2) else start_day.year
        try:
            end = _ts(year, start_day.month, int(day.group(1))) + DAY
        except ValueError:
            return None
        start = first_only[0] if not day.group(2) else _ts(year, start_day.month, start_day.day)
        return TimeCue(start, end, m.group(0).lower(), first_only[1] and not day.group(2))
    if second is None:
        return None
    end_year = datetime.fromtimestamp(second[0], tz=UTC).year
    first = _first_date(m.group("a"), reference, end_year if not second[1] else None)
    if first is None or first[0] > second[0]:
        return None
    return TimeCue(first[0], second[0] + DAY, m.group(0).lower(), first[1] and second[1])


def _relative_to_date(query: str, reference: datetime) -> TimeCue | None:
    m = _RE_RELATIVE_TO.search(query)
    if not m:
        return None
    anchor = _first_date(m.group("rest"), reference)
    if anchor is None or not m.group("rest").lstrip().lower().startswith(
            tuple(str(i) for i in range(10)) + tuple(_MONTHS) + ("the ",)):
        return None
    raw = (m.group("n") or "one").lower()
    span = (int(raw) if raw.isdigit() else _NUM.get(raw, 1)) * _UNITS[m.group("unit").lower()] * DAY
    at, floating, _ = anchor
    label = m.group(0).lower()
    direction = m.group("dir").lower()
    if direction == "before":
        return TimeCue(at - span, at + DAY, label, floating)
    if direction == "after":
        return TimeCue(at, at + DAY + span, label, floating)
    monday = at - datetime.fromtimestamp(at, tz=UTC).weekday() * DAY  # "the week of X"
    return TimeCue(monday, monday + span, label, floating) if m.group("unit").lower() == "week" \
        else TimeCue(at - span / 2, at + span / 2 + DAY, label, floating)


def _relative_to_now(query: str, now: float, today: datetime) -> TimeCue | None:
    m = _RE_DAYWORD.search(query)
    if m:
        word = m.group(1).lower()
        if word == "yesterday":
            start = today - timedelta(days=1)
            return TimeCue(start.timestamp(), today.timestamp(), "yesterday")
        if word in ("today", "tonight", "this morning"):
            return TimeCue(today.timestamp(), now + 1.0, word)
    m = _RE_AGO.search(query)
    if m:
        raw = m.group(1).lower()
        n = int(raw) if raw.isdigit() else _NUM.get(raw, 1)
        days = n * _UNITS[m.group(2).lower()]
        center = now - days * DAY
        slack = max(1.0, days * 0.5) * DAY
        return TimeCue(center - slack, center + slack, m.group(0).lower())
    m = _RE_LAST.search(query)
    if m:
        which, unit = m.group(1).lower(), m.group(2).lower()
        if unit == "weekend":
            back = (today.weekday() - 5) % 7 or 7
            start = today - timedelta(days=back)
            return TimeCue(start.timestamp(), (start + timedelta(days=2)).timestamp(), m.group(0).lower())
        if which == "this" or (which == "past" and unit != "day"):
            return TimeCue(now - _UNITS[unit] * DAY, now + 1.0, m.group(0).lower())
        start, end = _previous_period(unit, today)
        return TimeCue(start.timestamp(), end.timestamp(), m.group(0).lower())
    return None


def _previous_period(unit: str, today: datetime) -> tuple[datetime, datetime]:
    """The calendar period before the current one, ``[start, end)``: "last week" is Monday to
    Sunday of the week before this one (ISO weeks), "last month" the previous calendar month,
    "last year" the previous calendar year, "last day" yesterday. It never includes today.

    >>> [d.day for d in _previous_period("week", datetime(2026, 12, 2, tzinfo=UTC))]  # a Wednesday
    [23, 30]
    """
    if unit == "week":
        end = today - timedelta(days=today.weekday())
        return end - timedelta(days=7), end
    if unit == "month":
        end = today.replace(day=1)
        return (end - timedelta(days=1)).replace(day=1), end
    if unit == "year":
        end = today.replace(month=1, day=1)
        return end.replace(year=end.year - 1), end
    return today - timedelta(days=1), today


def _month_or_year(query: str, reference: datetime) -> TimeCue | None:
    for m in _RE_MONTH.finditer(query):
        name = m.group("m").lower()
        prep = (m.group("prep") or "").lower()
        if name in _AMBIGUOUS and not (prep or m.group("y")):
            continue
        if name == "may" and not m.group("y") and prep not in ("in", "during", "since", "early", "late",
                                                               "mid", "around", "by"):
            continue
        month = _MONTHS[name]
        year = int(m.group("y")) if m.group("y") else (
            reference.year if month <= reference.month else reference.year - 1)
        start, end = _month_range(year, month)
        return TimeCue(start, end, m.group(0).strip().lower(), floating=not m.group("y"))
    ym = _RE_YEAR.search(query)
    if ym:
        year = int(ym.group("y"))
        return TimeCue(_ts(year, 1), _ts(year + 1, 1), ym.group(0).lower())
    return None


def parse_time_cue(query: str, *, now: float) -> TimeCue | None:
    """The time range that ``query`` names, relative to ``now``; None when it names none.

    Precedence, most specific first: an explicit range ("between ... and ..."), a span around a
    date ("the week before 16 Nov"), a date ("on 9 November, 2022"), a cue relative to ``now``
    ("yesterday", "3 days ago"; "last week" / "last month" / "last year" is the previous calendar
    period, never today; "this week" / "past week" the seven days up to ``now``), a month
    ("in May 2023"), a year, and last the vague "recently" (the two weeks up to ``now``).
    """
    if (_RE_ANY_ASCII.search(query.lower()) if query.isascii() else _RE_ANY.search(query)) is None:
        return None
    return _parse(query, now)


def _parse(query: str, now: float) -> TimeCue | None:
    reference = datetime.fromtimestamp(now, tz=UTC)
    today = reference.replace(hour=0, minute=0, second=0, microsecond=0)
    cue = _range(query, reference) or _relative_to_date(query, reference)
    if cue is not None:
        return cue
    date = _first_date(query, reference)
    if date is not None:
        return TimeCue(date[0], date[0] + DAY, date[2].lower(), date[1])
    cue = _relative_to_now(query, now, today) or _month_or_year(query, reference)
    if cue is None and (m := _RE_VAGUE.search(query)):  # weakest: any explicit period wins
        cue = TimeCue(now - 14 * DAY, now + 1.0, m.group(1).lower())
    return cue
