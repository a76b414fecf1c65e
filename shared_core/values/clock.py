"""The `Clock` seam: where the atlas reads the time.

Every formula that depends on time (decay, recency, TTL) takes the time from the atlas's clock, so
tests and notebooks can inject a `ManualClock` and move it by hand instead of sleeping.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from typing import Protocol, runtime_checkable

__all__ = ["EARLIEST", "LATEST", "Clock", "ManualClock", "SystemClock", "to_epoch"]

#: The times a memory may hold, in POSIX seconds: 0001-01-02 to 9999-12-30 UTC, the range of
#: `datetime` less a day at each end (so a time shown in any time zone, or moved by a day, stays
#: a `datetime`). Every time a write accepts (``timestamp``, ``now + ttl``) and every time a
#: saved file holds is checked against this one range (`shared_core.values._validate.time_value`); a
#: number outside it is most often milliseconds given for seconds (1e12 is the year 33658).
EARLIEST: float = datetime(1, 1, 2, tzinfo=UTC).timestamp()
LATEST: float = datetime(9999, 12, 30, tzinfo=UTC).timestamp()


@runtime_checkable
class Clock(Protocol):
    """Anything with ``now() -> float``, the current time in POSIX seconds (UTC)."""

    def now(self) -> float: ...


class SystemClock:
    """The wall clock."""

    def now(self) -> float:
        return time.time()

    def __repr__(self) -> str:
        return "SystemClock()"


class ManualClock:
    """A clock that moves only when told to; thread safe.

    >>> clock = ManualClock(1_000.0)
    >>> clock.advance(days=1)
    87400.0
    """

    def __init__(self, start: float | datetime = 1_700_000_000.0) -> None:
        self._now = to_epoch(start)
        self._lock = threading.Lock()

    def now(self) -> float:
        with self._lock:
            return self._now

    def set(self, when: float | datetime) -> None:
        with self._lock:
            self._now = to_epoch(when)

    def advance(self, seconds: float = 0.0, *, minutes: float = 0.0, hours: float = 0.0,
                days: float = 0.0) -> float:
        """Move forward and return the new time."""
        delta = seconds + 60.0 * minutes + 3600.0 * hours + 86400.0 * days
        if delta < 0:
            raise ValueError(f"a clock only moves forward, got {delta!r} seconds")
        with self._lock:
            self._now += delta
            return self._now

    def __repr__(self) -> str:
        return f"ManualClock({self._now!r})"


def to_epoch(value: float | int | datetime | str) -> float:
    """POSIX seconds from a number, an aware or naive (taken as UTC) datetime, or an ISO string."""
    if isinstance(value, bool):
        raise TypeError(f"not a time: {value!r}")
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        try:
            return value.timestamp()
        except OverflowError:  # year 1 in a zone east of UTC lies before the epoch's range
            raise ValueError(f"{value!r} is outside the range of datetime") from None
    raise TypeError(f"not a time: {value!r}")
