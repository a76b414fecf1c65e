"""Runs of one speaker's messages: the text a chat message is embedded as.

A chat turn is often sent as several messages of one speaker in a row ("Went hiking Saturday." /
"It was great."). Embedded alone, the second says little more than its speaker's label, so it is
close to every question about her. `SpeakerRuns` embeds a message that *continues* a run (its
session's previous message has the same speaker and both carry content, see
`shared_core.formulas.chatter.contentless`) together with the end of the previous message
(`shared_core.formulas.chatter.continued`); any other message is embedded as its labelled line
(`shared_core.formulas.subqueries.labelled`), as before. Only the embedded text changes: the
stored content, the keyword index and every link are the same.

The previous message comes from what the atlas already has: the earlier items of the same
`add_memories` batch, else the last message this process wrote to the session (kept here, one
per session, at most `SESSIONS` sessions, the least recently written dropped first). Nothing is
read from the store, so a server backend makes no extra request. In another process, or after
the session's entry was dropped, a message that continues a run is embedded alone: its vector
differs a little, nothing else does. `forget` and `end_session` drop the session's entry, so a
forgotten message is never read into a later one's vector.

>>> runs = SpeakerRuns()
>>> items = [("Went hiking Saturday.", "ns", "s1", {"speaker": "Kate"}),
...          ("It was great.", "ns", "s1", {"speaker": "Kate"})]
>>> runs.texts(items)
['Kate: Went hiking Saturday.', 'Kate: Went hiking Saturday. It was great.']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..formulas.chatter import body, contentless, continued
from ..formulas.subqueries import labelled, speaker_of

__all__ = ["SESSIONS", "SpeakerRuns"]

#: sessions whose last message a `SpeakerRuns` keeps (a bound on memory, not a tuned constant)
SESSIONS = 4096

Item = tuple[str, str, "str | None", "Mapping[str, Any] | None"]  # content, namespace, session, metadata
_Last = tuple[str, str] | None  # (speaker, body) of a session's last message with content; None: not a run


class SpeakerRuns:
    """Each session's last message in this process, and the embedding texts it implies (see the
    module). Thread safe: `texts` reads under its own lock, `remember` writes under it."""

    def __init__(self, sessions: int = SESSIONS) -> None:
        self._sessions = sessions
        self._last: OrderedDict[tuple[str, str], _Last] = OrderedDict()
        self._lock = threading.Lock()

    def texts(self, items: Sequence[Item]) -> list[str]:
        """The text to embed for each ``(content, namespace, session_id, metadata)``, in write order."""
        out: list[str] = []
        with self._lock:
            last: dict[tuple[str, str], _Last] = {}
            for content, namespace, session, metadata in items:
                if session is None:
                    out.append(labelled(content, metadata))
                    continue
                key = (namespace, session)
                before = last[key] if key in last else self._last.get(key)
                entry = _entry(content, metadata)
                if entry is not None and before is not None and before[0] == entry[0]:
                    out.append(continued(entry[0], before[1], content, metadata))
                else:
                    out.append(labelled(content, metadata))
                last[key] = entry
        return out

    def remember(self, items: Iterable[Item]) -> None:
        """Record the written items as their sessions' last messages (after the write succeeded)."""
        with self._lock:
            for content, namespace, session, metadata in items:
                if session is None:
                    continue
                key = (namespace, session)
                self._last[key] = _entry(content, metadata)
                self._last.move_to_end(key)
            while len(self._last) > self._sessions:
                self._last.popitem(last=False)

    def drop(self, namespace: str, session: str | None) -> None:
        """Forget a session's last message (its memory was forgotten or the session ended)."""
        if session is not None:
            with self._lock:
                self._last.pop((namespace, session), None)


def _entry(content: str, metadata: Mapping[str, Any] | None) -> _Last:
    """(speaker, body) of a message with content and a speaker; None for any other (it ends a run)."""
    who = speaker_of(content, metadata)
    if who is None or contentless(content, metadata):
        return None
    return who, body(content, metadata)
