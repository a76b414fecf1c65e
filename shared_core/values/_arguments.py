"""Keyword-argument checks for the framework adapters: a misnamed argument is an error that names
the right one, never silently ignored.

The adapters take their framework's names (LangChain's retriever ``k``, LlamaIndex's
``similarity_top_k`` and ``token_limit``); a user who brings the name from the other framework or
from the core API (``top_k``, ``token_budget``) gets an `InvalidInputError` that says which name
this class takes. A close misspelling is matched with `difflib`.

>>> check_arguments("AtlasRetriever", {"top_k": 1}, accepted={"k", "namespace"}, renames={"top_k": "k"})
Traceback (most recent call last):
...
shared_core.values.errors.InvalidInputError: AtlasRetriever got an unknown argument 'top_k': use k= instead
"""

from __future__ import annotations

import difflib
from collections.abc import Collection, Mapping

from .errors import InvalidInputError

__all__ = ["check_arguments"]


def check_arguments(owner: str, given: Collection[str], *, accepted: Collection[str],
                    renames: Mapping[str, str] | None = None) -> None:
    """Raise `InvalidInputError` for the first name of ``given`` that is not in ``accepted``.

    ``renames`` maps names known to be confused with this class's own (another framework's or the
    core's) to the accepted one; otherwise the closest accepted name is suggested, if any is close.
    """
    renames = renames or {}
    for name in given:
        if name in accepted:
            continue
        right = renames.get(name)
        if right is None:
            close = difflib.get_close_matches(name, [*sorted(accepted), *sorted(renames)], n=1, cutoff=0.75)
            right = renames.get(close[0], close[0]) if close else None
        hint = f"use {right}= instead" if right else f"it takes {', '.join(sorted(accepted))}"
        raise InvalidInputError(f"{owner} got an unknown argument {name!r}: {hint}")
