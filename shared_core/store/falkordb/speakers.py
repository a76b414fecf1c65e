"""The speakers of a namespace's memories on the server, in one request (`FalkorPartition.speakers`).

What `shared_core.formulas.subqueries.speaker_of` gives for each memory, without reading the
memories: the server answers the distinct ``speaker`` values of the memories' metadata (stored
as compact JSON: the string after ``"speaker":"``) and the distinct text before the first colon
of the other memories' content, and `speakers_of_rows` keeps what `speaker_of` would read as a
speaker (a JSON string that decodes, a chat label).

>>> sorted(speakers_of_rows([["m", "Kate"], ["m", "Jos\\\\u00e9"], ["l", "Tom"], ["l", "note"], ["m", " "]]))
['José', 'Kate', 'Tom']
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ...formulas.subqueries import speaker_of

__all__ = ["SPEAKERS", "speakers_of_rows"]

_KEY = '\'"speaker":"\''
#: ("m", a metadata speaker as JSON string text) and ("l", a content's text before its first colon) rows.
SPEAKERS = (f"MATCH (n:Memory) WHERE n.metadata CONTAINS {_KEY} "
            f"RETURN DISTINCT 'm' AS kind, split(split(n.metadata, {_KEY})[1], '\"')[0] AS name "
            "UNION MATCH (n:Memory) WHERE n.content CONTAINS ':' "
            f"AND (n.metadata IS NULL OR NOT n.metadata CONTAINS {_KEY}) "
            "WITH split(n.content, ':')[0] AS head WHERE size(head) <= 64 "
            "RETURN DISTINCT 'l' AS kind, head AS name")


def speakers_of_rows(rows: Sequence[Sequence[Any]]) -> set[str]:
    """The speakers the rows of `SPEAKERS` name."""
    out: set[str] = set()
    for kind, name in rows:
        if not isinstance(name, str):
            continue
        if kind == "m":
            try:
                decoded = json.loads(f'"{name}"')
            except ValueError:  # a name with an escaped quote, cut at it: skipped
                continue
            who = speaker_of("", {"speaker": decoded})
        else:
            who = speaker_of(f"{name}:")
        if who is not None:
            out.add(who)
    return out
