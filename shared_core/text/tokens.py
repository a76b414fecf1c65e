"""The `TokenCounter` seam and the default exact, offline cl100k_base counter.

tiktoken downloads its encoding files at first use, which fails with no network. This package
ships the ``cl100k_base.tiktoken`` file itself (gzipped, in ``shared_core/_data``; MIT, see
its NOTICE.md); we read it, check its sha256 against the hash tiktoken itself pins, and build the
`tiktoken.Encoding` from it, so counts are exactly tiktoken's and nothing is fetched.
"""

from __future__ import annotations

import base64
import functools
import gzip
import hashlib
import importlib.resources
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from ..values.errors import CorruptFileError, InvalidInputError

if TYPE_CHECKING:
    import tiktoken

__all__ = ["CallableTokenCounter", "TiktokenCounter", "TokenCounter", "as_token_counter"]

#: sha256 of the decompressed cl100k_base.tiktoken, as pinned in tiktoken_ext.openai_public.
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
_WORD_CHARS = 64  # longer words are not cached: a text holding one is encoded whole
_CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text exactly as the target model would."""

    def count(self, text: str) -> int: ...


@functools.cache
def _cl100k() -> tiktoken.Encoding:
    import tiktoken

    raw = importlib.resources.files("shared_core._data").joinpath("cl100k_base.tiktoken.gz").read_bytes()
    data = gzip.decompress(raw)
    digest = hashlib.sha256(data).hexdigest()
    if digest != CL100K_SHA256:
        raise CorruptFileError(f"cl100k_base.tiktoken has sha256 {digest}, expected {CL100K_SHA256}")
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    return tiktoken.Encoding(
        name="cl100k_base",
        pat_str=_CL100K_PATTERN,
        mergeable_ranks=ranks,
        special_tokens=_CL100K_SPECIAL,
    )


class TiktokenCounter:
    """Exact cl100k_base token counts (GPT-4 / GPT-3.5 family), loaded offline.

    Special-token text such as ``<|endoftext|>`` is counted as ordinary text, never rejected.

    The same memories are counted again on every query, so counts are cached, which never
    changes one (a test checks them against tiktoken's on random text):

    - counts of texts up to ``cache_chars`` characters, in an LRU cache of ``cache_size``
      entries (0 turns every cache off), so at most ``cache_size * cache_chars`` characters;
    - counts of words, for texts made of lines of single-spaced words (as every memory line and
      every context block). cl100k_base encodes each piece of its pre-tokenising pattern on
      its own, and inside a piece whitespace only comes first (one character), last (newlines
      after punctuation) or alone (an all-whitespace piece). So in such a text a piece always
      starts at the space before a word and right after a newline run, and each part has the
      same pieces alone as in the text: ``count("w1 w2\\nw3") == count("w1") +
      count(" w2\\n") + count("w3")``, exactly. A new memory or block made of known words
      costs look-ups, not an encoding. Texts with other whitespace (tabs, two spaces, a
      leading or trailing newline...) or with words over 64 characters are encoded whole.
      Two LRU caches of ``2 * cache_size`` words each, and one of ``cache_size`` lines of
      blocks (a context block is counted line by line).

    >>> TiktokenCounter().count("hello world")
    2
    """

    _lock = threading.Lock()

    def __init__(self, *, cache_size: int = 8192, cache_chars: int = 256) -> None:
        for name, value in (("cache_size", cache_size), ("cache_chars", cache_chars)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidInputError(f"{name} must be an int >= 0, got {value!r}")
        with self._lock:  # the first load builds a 100k-entry table once per process
            self._encoding = _cl100k()
        encode = self._encoding.encode_ordinary

        def exact(text: str) -> int:
            return len(encode(text))

        def spaced(word: str) -> int:
            return len(encode(" " + word))

        first = functools.lru_cache(maxsize=2 * cache_size)(exact)
        rest = functools.lru_cache(maxsize=2 * cache_size)(spaced)

        def words_of(line: str) -> list[str] | None:
            """The words of a line of single-spaced words, None for any other line."""
            words = line.split()
            if words and max(map(len, words)) <= _WORD_CHARS and " ".join(words) == line:
                return words
            return None

        def line_tokens(line: str, newlines: int) -> int | None:
            """A line of a block and the newlines after it, by its words (None: not words)."""
            words = words_of(line)
            if words is None:
                return None
            end = "\n" * newlines
            if len(words) == 1:
                return first(words[0] + end)
            return first(words[0]) + sum(map(rest, words[1:-1])) + rest(words[-1] + end)

        lines_cached = functools.lru_cache(maxsize=cache_size)(line_tokens)

        def by_words(text: str) -> int:
            if "\n" not in text:  # one line, as a memory
                words = words_of(text)
                return exact(text) if words is None else first(words[0]) + sum(map(rest, words[1:]))
            lines = text.split("\n")
            if not lines[-1]:
                return exact(text)
            total, i = 0, 0
            while i < len(lines):
                j = i + 1
                while j < len(lines) and not lines[j]:  # "" in lines: a run of newlines
                    j += 1
                if j - i > 4:
                    return exact(text)
                count = lines_cached(lines[i], j - i if j < len(lines) else 0)
                if count is None:
                    return exact(text)
                total += count
                i = j
            return total

        self._exact = exact
        self._by_words = by_words if cache_size else exact
        self._cached = functools.lru_cache(maxsize=cache_size)(self._by_words)
        self._word_caches = (first, rest)
        self._line_cache = lines_cached
        self._cache_size, self._cache_chars = cache_size, cache_chars

    def __reduce__(self) -> tuple[Callable[[], TiktokenCounter], tuple[()]]:
        """Pickled as its settings: the encoding is shared per process, the caches start empty."""
        return functools.partial(TiktokenCounter, cache_size=self._cache_size, cache_chars=self._cache_chars), ()

    def count(self, text: str) -> int:
        if len(text) > self._cache_chars:
            return self._by_words(text)
        return self._cached(text)

    def cache_info(self) -> functools._CacheInfo:
        """Hits, misses, maximum size and current size of the cache of texts."""
        return self._cached.cache_info()

    def encode(self, text: str) -> list[int]:
        return self._encoding.encode_ordinary(text)

    def decode(self, tokens: list[int]) -> str:
        return self._encoding.decode(tokens)

    def __repr__(self) -> str:
        return "TiktokenCounter('cl100k_base')"


class CallableTokenCounter:
    """Wraps any ``str -> int`` callable as a `TokenCounter`."""

    def __init__(self, fn: Callable[[str], int]) -> None:
        self._fn = fn

    def count(self, text: str) -> int:
        n = self._fn(text)
        if not isinstance(n, int) or isinstance(n, bool) or n < 0:
            raise InvalidInputError(f"token counter returned {n!r} for a text; expected an int >= 0")
        return n

    def __repr__(self) -> str:
        return f"CallableTokenCounter({self._fn!r})"


def as_token_counter(value: TokenCounter | Callable[[str], int] | None) -> TokenCounter:
    """The default counter for None, the object itself for a `TokenCounter`, else a wrapper."""
    if value is None:
        return TiktokenCounter()
    if isinstance(value, TokenCounter):
        return value
    if callable(value):
        return CallableTokenCounter(value)
    raise InvalidInputError(f"token_counter must be a TokenCounter or a str -> int callable, got {value!r}")
