"""Input checks shared by the public methods: each raises a clear `AtlasError` naming the value."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .clock import EARLIEST, LATEST, to_epoch
from .errors import InvalidInputError, InvalidMemoryError

#: How deep metadata may nest (a mapping or list inside another counts one level): deeper
#: metadata is refused at the door rather than overflowing the JSON encoder's recursion.
MAX_DEPTH = 32


def encodable(value: str, what: str, error: type[InvalidInputError] = InvalidInputError) -> str:
    """``value`` if it encodes as UTF-8, else ``error``: a lone surrogate (``"\\ud800"``, which
    a Python string can hold and no file, index or server can store) is refused by name, and so
    is a NUL (U+0000), which FalkorDB's query parser cannot carry: one rule on every backend."""
    if "\x00" in value:
        raise error(f"{what} holds a NUL character (U+0000) at position {value.index(chr(0))}, "
                    "which cannot be stored on every backend")
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise error(f"{what} holds {value[exc.start:exc.end]!r} at position {exc.start}, which is not "
                    "valid Unicode text (a lone surrogate) and cannot be stored") from None
    return value


MAX_NAME = 256  # characters of a namespace or a session id
_CONTROL = re.compile("[\x00-\x1f\x7f]")


def control_char(value: str) -> str | None:
    """The first control character of ``value`` (U+0000-U+001F or U+007F), or None."""
    found = _CONTROL.search(value)
    return None if found is None else found.group()


def name(value: object, what: str, *, optional: bool = False) -> str:
    """The one rule for a namespace and a session id, on every backend, adapter and the MCP
    server: a string of at most `MAX_NAME` characters, not blank, with no control character
    (U+0000-U+001F, U+007F: a NUL cut FalkorDB's graph names short and let one namespace wipe
    another), no leading or trailing space (FalkorDB's range index trims it, so a session
    ``"s1 "`` matched nothing there; and a stray space is a lookalike of another tenant), and
    encodable as UTF-8 (no lone surrogate). Nothing is normalised: ``"alice"`` and ``"аlice"``
    (Cyrillic a) are two namespaces, each with its own memories and its own FalkorDB key.

    >>> name("alice", "namespace")
    'alice'
    >>> name("a\\x00b", "namespace")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    shared_core.values.errors.InvalidInputError: namespace must not contain a control character (U+0000 ...): 'a\\x00b'
    """
    expected = "None or a non-empty string" if optional else "a non-empty string"
    if not isinstance(value, str):
        raise InvalidInputError(f"{what} must be {expected}, got {value!r:.80}")
    char = control_char(value)
    if char is not None:
        raise InvalidInputError(f"{what} must not contain a control character "
                                f"(U+{ord(char):04X} at index {value.index(char)}): {value!r:.80}")
    if not value.strip():
        raise InvalidInputError(f"{what} must be {expected}, got {value!r:.80}")
    if value.strip() != value:
        raise InvalidInputError(f"{what} must not start or end with a space, got {value!r:.80}")
    if len(value) > MAX_NAME:
        raise InvalidInputError(f"{what} is longer than {MAX_NAME} characters: {value[:40]!r}…")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidInputError(f"{what} is not valid Unicode ({exc.reason} at index {exc.start}): "
                                f"{value!r:.80}") from None
    return value


def namespace(value: object) -> str:
    return name(value, "namespace")


def session(value: object) -> str | None:
    return None if value is None else name(value, "session_id", optional=True)


def content(value: object, *, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidMemoryError(f"content must be a string, got {type(value).__name__}: {value!r:.80}")
    if not value.strip():
        raise InvalidMemoryError(f"content must not be empty or blank, got {value!r}")
    if len(value) > max_chars:
        raise InvalidMemoryError(
            f"content has {len(value)} characters, more than max_content_chars={max_chars}")
    return encodable(value, "content", InvalidMemoryError)


def query(value: object, *, max_chars: int) -> str:
    """A query: a non-blank string of at most ``max_chars`` characters (`AtlasConfig.max_query_chars`).

    A longer query is refused, not cut: the caller wrote it, and a silently shortened search
    answers another question. (The chat memories of the adapters, whose query is the
    conversation itself, keep its last ``max_chars`` characters instead.)
    """
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"query must be a non-empty string, got {value!r:.80}")
    if len(value) > max_chars:
        raise InvalidInputError(f"query has {len(value):,} characters, more than max_query_chars={max_chars} "
                                f"(shorten it, or raise AtlasConfig.max_query_chars): {value[:40]!r}…")
    return value


def metadata(value: object, name: str = "metadata") -> dict[str, Any]:
    """A copy of ``value`` as a dict, if it is a mapping with string keys that JSON can store as
    UTF-8 (no NaN, no lone surrogate) and nests at most `MAX_DEPTH` levels; else
    `InvalidMemoryError`. The depth is measured first, without recursion, so that metadata
    nested thousands deep (or holding itself) is refused instead of overflowing the stack.

    >>> metadata({"tags": ["a", {"b": 1}]})
    {'tags': ['a', {'b': 1}]}
    """
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidMemoryError(f"{name} must be a mapping, got {type(value).__name__}")
    out = dict(value)
    for key in out:
        if not isinstance(key, str):
            raise InvalidMemoryError(f"{name} keys must be strings, got {key!r}")
    depth(out, name, MAX_DEPTH)
    try:
        json.dumps(out, allow_nan=False, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidMemoryError(f"{name} holds {exc.object[exc.start:exc.end]!r}, which is not valid Unicode "
                                 "text (a lone surrogate) and cannot be stored") from None
    except (TypeError, ValueError) as exc:
        raise InvalidMemoryError(f"{name} must be JSON-serialisable: {exc}") from None
    return out


def depth(value: object, name: str, limit: int) -> None:
    """`InvalidMemoryError` if ``value`` nests mappings and lists more than ``limit`` deep
    (a container that holds itself nests without end). Iterative: any depth is safe to measure.

    >>> depth({"a": [1, {"b": 2}]}, "metadata", 3)
    >>> depth({"a": [1, {"b": 2}]}, "metadata", 2)
    Traceback (most recent call last):
    ...
    shared_core.values.errors.InvalidMemoryError: metadata nests deeper than 2 levels (or holds itself)
    """
    stack: list[tuple[object, int]] = [(value, 1)]
    pop, push, scalars = stack.pop, stack.append, _SCALARS
    while stack:
        item, level = pop()
        kind = type(item)
        children: Iterable[object]
        if kind is dict:
            children = item.values()  # type: ignore[attr-defined]
        elif kind is list or kind is tuple:
            children = item  # type: ignore[assignment]
        elif isinstance(item, Mapping):
            children = item.values()
        elif isinstance(item, (list, tuple)):
            children = item
        else:
            continue
        if level > limit:
            raise InvalidMemoryError(f"{name} nests deeper than {limit} levels (or holds itself)")
        for child in children:
            if type(child) not in scalars:
                push((child, level + 1))


_SCALARS = frozenset({str, int, float, bool, type(None)})


def number(value: object, name: str, *, minimum: float | None = None, positive: bool = False,
           maximum: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InvalidInputError(f"{name} must be a finite number, got {value!r}")
    if positive and not value > 0:
        raise InvalidInputError(f"{name} must be > 0, got {value!r}")
    if minimum is not None and value < minimum:
        raise InvalidInputError(f"{name} must be >= {minimum}, got {value!r}")
    if maximum is not None and value > maximum:
        raise InvalidInputError(f"{name} must be <= {maximum}, got {value!r}")
    return float(value)


def count(value: object, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInputError(f"{name} must be an int >= 0, got {value!r}")
    return value


def timestamp(value: object, name: str = "timestamp") -> float | None:
    """None, or POSIX seconds from a datetime, an ISO string or a number, within
    [`EARLIEST`, `LATEST`] (`shared_core.values.clock`); else `InvalidMemoryError`."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, datetime, str)):
        raise InvalidMemoryError(f"{name} must be a datetime, an ISO string or POSIX seconds, got {value!r}")
    try:
        ts = to_epoch(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise InvalidMemoryError(f"{name} {value!r:.80} is not a time: {exc}") from None
    return time_value(ts, name)


def time_value(ts: object, name: str) -> float:
    """``ts`` as a float if it is a number of POSIX seconds in [`EARLIEST`, `LATEST`] (years 1
    to 9999), else `InvalidMemoryError` naming the range; the one check of every stored time."""
    if isinstance(ts, bool) or not isinstance(ts, (int, float)) or not math.isfinite(ts) \
            or not EARLIEST <= ts <= LATEST:
        hint = " (milliseconds given as seconds?)" if isinstance(ts, (int, float)) and 1e11 < ts < 1e16 else ""
        raise InvalidMemoryError(f"{name} must be a time between {EARLIEST:.0f} and {LATEST:.0f} POSIX seconds "
                                 f"(years 1 to 9999), got {ts!r}{hint}")
    return float(ts)


def ttl(value: object, name: str = "ttl") -> float | None:
    """None, or a positive number of seconds no longer than the span of storable times."""
    if value is None:
        return None
    seconds = number(value, name, positive=True)
    if seconds > LATEST - EARLIEST:
        raise InvalidMemoryError(f"{name} must be at most {LATEST - EARLIEST:.0f} seconds (the span of "
                                 f"years 1 to 9999), got {value!r}")
    return seconds


def expiry(now: float, ttl: float | None, name: str = "ttl") -> float | None:
    """``now + ttl``, the expiry time of a memory written at ``now``, if it is a storable time."""
    if ttl is None:
        return None
    at = now + ttl
    if not at <= LATEST:
        raise InvalidMemoryError(f"{name} {ttl!r} would expire after the year 9999 (now + ttl = {at!r}); "
                                 f"the latest storable time is {LATEST:.0f}")
    return at


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}")
    return value


def node_id(value: object, name: str = "node_id") -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r:.80}")
    return encodable(value, name)


def id_set(value: object, name: str) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidInputError(f"{name} must be a collection of string ids, got {value!r:.80}")
    items = list(value)
    for item in items:
        if not isinstance(item, str):
            raise InvalidInputError(f"{name} must hold string ids, got {item!r}")
    return frozenset(items)
