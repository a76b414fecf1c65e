"""Input checks shared by the public methods: each raises a clear `AtlasError` naming the value."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from .clock import to_epoch
from .errors import InvalidInputError, InvalidMemoryError

MAX_NAME = 256


def namespace(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"namespace must be a non-empty string, got {value!r}")
    if len(value) > MAX_NAME:
        raise InvalidInputError(f"namespace is longer than {MAX_NAME} characters: {value[:40]!r}…")
    return value


def session(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"session_id must be None or a non-empty string, got {value!r}")
    if len(value) > MAX_NAME:
        raise InvalidInputError(f"session_id is longer than {MAX_NAME} characters: {value[:40]!r}…")
    return value


def content(value: object, *, max_chars: int) -> str:
    if not isinstance(value, str):
        raise InvalidMemoryError(f"content must be a string, got {type(value).__name__}: {value!r:.80}")
    if not value.strip():
        raise InvalidMemoryError(f"content must not be empty or blank, got {value!r}")
    if len(value) > max_chars:
        raise InvalidMemoryError(
            f"content has {len(value)} characters, more than max_content_chars={max_chars}")
    return value


def query(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidInputError(f"query must be a non-empty string, got {value!r:.80}")
    return value


def metadata(value: object) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise InvalidMemoryError(f"metadata must be a mapping, got {type(value).__name__}")
    out = dict(value)
    for key in out:
        if not isinstance(key, str):
            raise InvalidMemoryError(f"metadata keys must be strings, got {key!r}")
    try:
        json.dumps(out, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidMemoryError(f"metadata must be JSON-serialisable: {exc}") from None
    return out


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
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, datetime, str)):
        raise InvalidMemoryError(f"{name} must be a datetime, an ISO string or POSIX seconds, got {value!r}")
    try:
        ts = to_epoch(value)
    except (TypeError, ValueError) as exc:
        raise InvalidMemoryError(f"{name} {value!r} is not a time: {exc}") from None
    if not math.isfinite(ts):
        raise InvalidMemoryError(f"{name} must be finite, got {value!r}")
    return ts


def flag(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise InvalidInputError(f"{name} must be True or False, got {value!r}")
    return value


def node_id(value: object, name: str = "node_id") -> str:
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{name} must be a non-empty string, got {value!r}")
    return value


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
