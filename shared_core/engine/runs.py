"""Bridges across backchannels: a reply linked to the message it answers past its own "lol".

In a chat a reply often starts with a backchannel of its own, sent as a message of its own ("How
was the weekend?" / "lol" / "Went hiking, the ridge trail."). The session's ``before`` edges run
through the backchannel, so the graph walk passes a message's relevance to the reply only
attenuated twice, and a context window reaches the reply only past the backchannel. `SessionRuns`
gives the write path, per new memory, the id of a *bridge*: an extra ``before`` edge from the
session's previous message with content when every message between them is a backchannel
(`shared_core.formulas.chatter.contentless`), one at least, and the new message's speaker
(`shared_core.formulas.subqueries.speaker_of`) sent one of them (`WriteBatch.bridges`, stored by
every backend next to the session's ``before`` edge). Any other message gets none: one that
follows its predecessor directly, one after backchannels of other speakers only ("Kate: Went
hiking." / "Jon: lol" / "Kate: The ridge."), one without a known speaker, a backchannel itself,
or one without a session.

The previous message comes from what the atlas already has: the earlier items of the same write,
else the last state this process recorded for the session (one entry per session, at most
`SESSIONS` sessions, the least recently written dropped first). Nothing is read from the store,
so a server backend makes no extra request; in another process, or after the entry was dropped,
the first bridge of a session is missed (a weaker walk, never a wrong edge). `forget` and
`end_session` drop the session's entry, and a store draws no bridge from a memory it no longer
holds. Only a write that succeeded is recorded (`Plan.commit`). Two processes writing the same
session at once may bridge across each other's messages: such a session is not a chat.

>>> runs = SessionRuns()
>>> plan = runs.plan()
>>> plan.bridges("ns", [("a", "s1", "How was the weekend?", {"speaker": "Jon"}),
...                     ("b", "s1", "lol", {"speaker": "Kate"}),
...                     ("c", "s1", "Went hiking, the ridge trail.", {"speaker": "Kate"}),
...                     ("d", "s1", "Jon: nice", None),
...                     ("e", "s1", "Kate: 12 miles", None)])
[None, None, 'a', None, None]
>>> plan.commit()
>>> runs.plan().bridges("ns", [("f", "s1", "omg", {"speaker": "Jon"}), ("g", "s1", "Jon: how long?", None)])
[None, 'e']
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from ..formulas.chatter import contentless
from ..formulas.subqueries import speaker_of

__all__ = ["SESSIONS", "Plan", "SessionRuns"]

#: sessions whose last state a `SessionRuns` keeps (a bound on memory, not a tuned constant)
SESSIONS = 4096

Key = tuple[str, str]  # (namespace, session id)
# a session's state after its last message: (id of the last message with content, the speakers
# of the backchannels sent since); None: nothing to bridge from
State = tuple[str, frozenset[str]] | None
Row = tuple[str, "str | None", str, "Mapping[str, Any] | None"]  # id, session, content, metadata
_NONE: frozenset[str] = frozenset()


def step(state: State, node_id: str, content: str, metadata: Mapping[str, Any] | None) -> tuple[str | None, State]:
    """The bridge of one new message (an id, or None) and the session's state after it.

    >>> step(("a", frozenset({"Kate"})), "c", "Went hiking.", {"speaker": "Kate"})
    ('a', ('c', frozenset()))
    >>> step(("a", frozenset()), "b", "lol", {"speaker": "Kate"})
    (None, ('a', frozenset({'Kate'})))
    """
    who = speaker_of(content, metadata)
    if contentless(content, metadata):
        if state is None or who is None:
            return None, state
        return None, (state[0], state[1] | {who})
    if who is None:
        return None, None
    return (state[0] if state is not None and who in state[1] else None), (node_id, _NONE)


class SessionRuns:
    """Each session's state after the last message this process wrote to it (see the module).
    Thread safe: a `Plan` reads under the lock, `Plan.commit` and `drop` write under it."""

    def __init__(self, sessions: int = SESSIONS) -> None:
        self._sessions = sessions
        self._states: OrderedDict[Key, State] = OrderedDict()
        self._lock = threading.Lock()

    def plan(self) -> Plan:
        """The bridges of one write, recorded only on `Plan.commit`."""
        return Plan(self)

    def drop(self, namespace: str, session: str | None) -> None:
        """Forget a session's state (one of its memories was forgotten, or the session ended)."""
        if session is not None:
            with self._lock:
                self._states.pop((namespace, session), None)

    def _get(self, key: Key) -> State:
        with self._lock:
            return self._states.get(key)

    def _record(self, states: Mapping[Key, State]) -> None:
        with self._lock:
            for key, state in states.items():
                self._states[key] = state
                self._states.move_to_end(key)
            while len(self._states) > self._sessions:
                self._states.popitem(last=False)


class Plan:
    """One write's view of the sessions: the recorded states, then its own earlier rows."""

    def __init__(self, runs: SessionRuns) -> None:
        self._runs = runs
        self._states: dict[Key, State] = {}

    def bridges(self, namespace: str, rows: Sequence[Row]) -> list[str | None]:
        """Each row's bridge (``(id, session, content, metadata)`` in write order), the rows
        taken as written after every row an earlier call of this plan was given."""
        out: list[str | None] = []
        states = self._states
        for node_id, session, content, metadata in rows:
            if session is None:
                out.append(None)
                continue
            key = (namespace, session)
            state = states[key] if key in states else self._runs._get(key)
            bridge, states[key] = step(state, node_id, content, metadata)
            out.append(bridge)
        return out

    def commit(self) -> None:
        """Record the sessions' states (after the write succeeded)."""
        self._runs._record(self._states)
        self._states = {}
