"""Where a FalkorDB server is and how patiently to talk to it: `Settings`, the URL that gives
them (`parse_url`), and the graph key of each namespace (`graph_key`, `namespace_of`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from ...values import _validate as check
from ...values.errors import InvalidInputError

__all__ = ["Settings", "graph_key", "namespace_of", "parse_url"]

_SCHEMES = ("falkordb", "falkor", "redis")


@dataclass(frozen=True, slots=True, kw_only=True)
class Settings:
    """Where the server is and how patiently to talk to it.

    ``namespace_ttl`` (seconds) expires a namespace's graph that long after its last write;
    ``prefix`` starts every graph key (``atlas:alice``), so several atlases can share a server.
    ``replicas`` (N >= 1) makes every write wait until N replicas of its shard confirm it, for
    at most ``replica_timeout`` seconds (`shared_core.store.falkordb.replication`).
    A prefix is empty or ends with ``:`` and holds no control character: with the escaping of
    `graph_key`, that makes every (prefix, namespace) pair's key its own, however prefixes nest.
    """

    host: str = "127.0.0.1"
    port: int = 6379
    username: str | None = None
    password: str | None = None
    prefix: str = "atlas:"
    namespace_ttl: int | None = None
    timeout: float = 30.0
    connect_timeout: float = 2.0
    retry_for: float = 10.0
    replicas: int = 0
    replica_timeout: float = 2.0

    def __post_init__(self) -> None:
        if not isinstance(self.prefix, str) or (self.prefix and not self.prefix.endswith(":")):
            raise InvalidInputError(f"the graph key prefix must be empty or end with ':', got {self.prefix!r}")
        char = check.control_char(self.prefix)
        if char is not None:
            raise InvalidInputError(f"the graph key prefix must not contain a control character "
                                    f"(U+{ord(char):04X}), got {self.prefix!r}")
        if not self.host:
            raise InvalidInputError("the FalkorDB host is empty")
        if not 0 < self.port < 65536:
            raise InvalidInputError(f"the FalkorDB port must be in 1..65535, got {self.port!r}")
        if self.namespace_ttl is not None and self.namespace_ttl < 1:
            raise InvalidInputError(f"namespace_ttl must be None or an int >= 1, got {self.namespace_ttl!r}")
        for name in ("timeout", "connect_timeout"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and 0 < value < math.inf):
                raise InvalidInputError(f"{name} must be a positive number of seconds, got {value!r}")
        if not (isinstance(self.retry_for, (int, float)) and 0 <= self.retry_for < math.inf):
            raise InvalidInputError(f"retry_for must be >= 0 seconds, got {self.retry_for!r}")
        if isinstance(self.replicas, bool) or not isinstance(self.replicas, int) or not 0 <= self.replicas <= 64:
            raise InvalidInputError(f"replicas must be an int in 0..64 (0: writes wait for no replica), "
                                    f"got {self.replicas!r}")
        timeout = self.replica_timeout
        if isinstance(timeout, bool) or not (isinstance(timeout, (int, float)) and 0.001 <= timeout <= 3600):
            raise InvalidInputError(f"replica_timeout must be a number of seconds in 0.001..3600, got {timeout!r}")

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def url(self) -> str:
        """The server's URL as messages show it (no credentials, no options)."""
        return f"falkordb://{self.address}"


_ESCAPES = {"%": "%25", ":": "%3A"}
_ESCAPED = re.compile("%(25|3A)")


def graph_key(prefix: str, namespace: str) -> str:
    """The graph key of ``namespace``: the prefix, then the namespace with ``%`` and ``:`` escaped.

    The escaped namespace holds no ``:`` and a prefix ends with one, so a key's prefix is
    everything up to its last ``:``: no two (prefix, namespace) pairs share a key, and an atlas
    on ``pp:`` never reaches one on ``pp:team2:``. A namespace without ``%`` or ``:`` keeps
    the key it always had.

    >>> graph_key("pp:", "team2:alice"), graph_key("pp:team2:", "alice"), graph_key("pp:", "50%")
    ('pp:team2%3Aalice', 'pp:team2:alice', 'pp:50%25')
    """
    if "%" in namespace or ":" in namespace:
        namespace = "".join(_ESCAPES.get(c, c) for c in namespace)
    return prefix + namespace


def namespace_of(prefix: str, key: str) -> str | None:
    """The namespace whose `graph_key` under ``prefix`` is ``key``, or None when there is none
    (another prefix's key, such as a nested prefix's, a key this scheme never writes, or a
    name the namespace rule refuses).

    >>> namespace_of("pp:", "pp:team2%3Aalice"), namespace_of("pp:", "pp:team2:alice")
    ('team2:alice', None)
    """
    if not key.startswith(prefix) or len(key) == len(prefix):
        return None
    namespace = _ESCAPED.sub(lambda m: "%" if m.group(1) == "25" else ":", key[len(prefix):])
    if graph_key(prefix, namespace) != key:
        return None
    try:
        return check.namespace(namespace)
    except InvalidInputError:
        return None


def parse_url(url: str) -> Settings:
    """``falkordb://[user:password@]host[:port][?ttl=S&prefix=P&timeout=S&connect_timeout=S&retry_for=S
    &replicas=N&replica_timeout=S]``.

    >>> s = parse_url("falkordb://127.0.0.1:6390?ttl=3600&prefix=team1:&replicas=1")
    >>> (s.host, s.port, s.namespace_ttl, s.prefix, s.replicas)
    ('127.0.0.1', 6390, 3600, 'team1:', 1)
    """
    if not isinstance(url, str):
        raise InvalidInputError(f"a FalkorDB URL must be a string, got {type(url).__name__}")
    shown = _redact(url)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: {exc}") from None
    if parts.scheme.lower() not in _SCHEMES:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: the scheme must be one of {', '.join(_SCHEMES)}")
    if not parts.hostname:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: no host (expected falkordb://host:port)")
    if parts.path not in ("", "/"):
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: unexpected path {parts.path!r}")
    options: dict[str, Any] = {}
    numbers = {"ttl": ("namespace_ttl", int), "timeout": ("timeout", float),
               "connect_timeout": ("connect_timeout", float), "retry_for": ("retry_for", float),
               "replicas": ("replicas", int), "replica_timeout": ("replica_timeout", float)}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        if key == "prefix":
            options["prefix"] = value
        elif key in numbers:
            name, kind = numbers[key]
            try:
                options[name] = kind(value)
            except ValueError:
                what = "an integer" if kind is int else "a number"
                raise InvalidInputError(f"bad FalkorDB URL {shown!r}: {key}={value!r} is not {what}") from None
        else:
            raise InvalidInputError(f"bad FalkorDB URL {shown!r}: unknown option {key!r} "
                                    f"(known: prefix, {', '.join(numbers)})")
    try:
        return Settings(host=parts.hostname, port=6379 if port is None else port,
                        username=unquote(parts.username) if parts.username else None,
                        password=unquote(parts.password) if parts.password else None, **options)
    except InvalidInputError as exc:
        raise InvalidInputError(f"bad FalkorDB URL {shown!r}: {exc}") from None


def _redact(url: str) -> str:
    """The URL as error messages show it: without its password.

    >>> _redact("falkordb://bob:secret@db:6379")
    'falkordb://bob:***@db:6379'
    """
    return re.sub(r"(//[^/@:]*:)[^/@]*@", r"\1***@", url)
