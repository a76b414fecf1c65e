"""Byte accounting for ``max_bytes`` and the cleanup rule, as pure functions.

What a memory costs is counted from what is actually stored for it: its embedding row, its text
(held twice: by the graph node and by the keyword index), its metadata (as JSON, plus the dict
that holds it when there is any), and a fixed overhead for the objects and index entries around
it; each edge costs a fixed overhead too. The overheads are calibrated for the in-process
backend on CPython (the resident memory that memories add to a process, less their texts' bytes
and the vector indexes' own bytes; ``tests/integration/test_lifecycle_stream.py`` checks the
accounting against real memory), and include part of the freed heap a process that never hands
memory back keeps from the write path. The vector index's own figure (``nbytes()``)
adds its spare capacity; an index that holds vectors elsewhere (faiss) must count them there.

>>> stored_bytes(text_bytes=40, metadata_bytes=0, dim=384)
2646
>>> cleanup_level(0.5, pressure=0.7), cleanup_level(0.8, pressure=0.7), cleanup_level(1.2, pressure=0.7)
('normal', 'pressure', 'over')
>>> fact_salience("User owns a dog"), fact_salience("Today I baked bread after work. Fun!")
(1.0, 0.0)
"""

from __future__ import annotations

import json
import math
import re
from typing import Literal

from ...formulas.subqueries import MERGED_FROM, keyword_text
from ...values.model import MemoryNode
from .write_filter import SMALL_TALK

__all__ = ["EDGE_OVERHEAD", "METADATA_OVERHEAD", "NODE_OVERHEAD", "PARTITION_OVERHEAD", "cleanup_level",
           "fact_salience", "node_bytes", "prunable", "stored_bytes"]

#: bytes per memory besides its text, vector and metadata (node object, index entries, FTS row,
#: and the write path's freed heap that a process keeps; see above)
NODE_OVERHEAD = 1030
#: bytes per edge (its row in the graph store's arrays and its place in two adjacency lists)
EDGE_OVERHEAD = 100
#: bytes of an in-process partition besides what its memories and edges count: its stores'
#: empty objects and arrays (``benchmarks/namespaces.py --empty``) and the heap that a flood of
#: namespaces made and dropped leaves fragmented per namespace kept (``benchmarks/namespaces.py``:
#: the resident memory per namespace at the end, less the event log and the memories' own
#: count); charged while the namespace holds memories, since an empty one is dropped
PARTITION_OVERHEAD = 12_000
#: bytes of the dict that holds a memory's metadata, when it has any (``sys.getsizeof`` of a
#: dict of up to five keys)
METADATA_OVERHEAD = 184


def stored_bytes(*, text_bytes: int, metadata_bytes: int, dim: int, itemsize: int = 4,
                 overhead: int = NODE_OVERHEAD) -> int:
    """The bytes one memory occupies: ``overhead + dim * itemsize + 2 * text_bytes + metadata_bytes``.

    ``text_bytes`` is the UTF-8 length of the text (stored by the graph and the keyword index),
    ``metadata_bytes`` the length of its JSON, ``dim * itemsize`` the embedding row.

    >>> stored_bytes(text_bytes=100, metadata_bytes=20, dim=16, overhead=1000)
    1284
    """
    return overhead + dim * itemsize + 2 * text_bytes + metadata_bytes


def node_bytes(node: MemoryNode, dim: int) -> int:
    """`stored_bytes` of a node. The text held twice is the content's, except for a merged
    memory (one with ``metadata["merged_from"]``): the keyword index holds its merged text
    (`shared_core.formulas.subqueries.keyword_text`: the content, then each absorbed memory's
    wording), so its text counts as the mean of the content's bytes and that text's, rounded up.

    >>> node_bytes(MemoryNode(id="a", content="héllo", namespace="n"), 4)
    1058
    >>> node_bytes(MemoryNode(id="a", content="héllo", namespace="n", metadata={"k": 1}), 4)
    1249
    >>> node_bytes(MemoryNode(id="a", content="héllo", namespace="n", metadata={"merged_from": [{"content": "hi"}]}), 4)
    1280
    """
    text = len(node.content.encode("utf-8"))
    if MERGED_FROM in node.metadata:
        text = (text + len(keyword_text(node.content, node.metadata).encode("utf-8")) + 1) // 2
    meta = len(json.dumps(dict(node.metadata), separators=(",", ":"))) + METADATA_OVERHEAD if node.metadata else 0
    return stored_bytes(text_bytes=text, metadata_bytes=meta, dim=dim)


#: a time anchor of the day: what it is said with is the day's news, not a lasting fact
_EPISODIC = re.compile(r"\b(?:today|tonight|yesterday|tomorrow|this (?:morning|afternoon|evening|weekend)|"
                       r"last night|at lunch|after (?:work|dinner|lunch|school)|before (?:breakfast|work|bed)|"
                       r"in the (?:morning|afternoon|evening)|right now|later)\b")
_REMEMBER = re.compile(r"\b(?:remember|don'?t forget|do not forget|note that|keep in mind|never forget)\b")
_WORDS = re.compile(r"[a-z][a-z']*|\d+")


def fact_salience(text: str) -> float:
    """What a memory's content is worth keeping under a cap, from its text alone: ``1.0`` for
    a statement that can hold beyond the day ("My daughter is allergic to peanuts", "User owns
    a dog") or an explicit "remember ...", ``0.0`` for small talk (every word in the write
    filter's small-talk vocabulary), a question, or the day's chatter (a time anchor of the day:
    "today", "tonight", "this morning", "after work").

    The eviction order multiplies a memory's value by ``episodic_value + (1 - episodic_value) *
    fact_salience`` (`AtlasConfig.episodic_value`), so the day's chatter, however often similar
    chatter recalls it, leaves before the facts a user relies on. A few regular expressions:
    cheap enough to run on every memory of an eviction pass.

    >>> fact_salience("The wifi password at the cabin is fjord-2041.")
    1.0
    >>> fact_salience("I'm going to the cinema tonight."), fact_salience("Where were we?")
    (0.0, 0.0)
    """
    lowered = text.lower().replace("’", "'")
    if _REMEMBER.search(lowered):
        return 1.0
    if lowered.rstrip().endswith("?") or _EPISODIC.search(lowered):
        return 0.0
    words = _WORDS.findall(lowered)
    return 0.0 if not words or SMALL_TALK.issuperset(words) else 1.0


def cleanup_level(usage: float, *, pressure: float) -> Literal["normal", "pressure", "over"]:
    """How hard cleanup works at ``usage = bytes_used / max_bytes``.

    ``"over"`` above 1 (evict the lowest-value memories down to ``1 - eviction_batch`` of the
    cap), ``"pressure"`` above ``pressure`` (the cleanup rule runs four times as often and with a
    quarter of its idle time), ``"normal"`` below.

    >>> cleanup_level(0.7, pressure=0.7)
    'normal'
    """
    if usage > 1.0:
        return "over"
    if usage > pressure:
        return "pressure"
    return "normal"


def prunable(weight: float, idle: float, *, below: float, min_idle: float, pinned: bool = False) -> bool:
    """The cleanup rule: ``weight < below`` and unused for at least ``min_idle`` seconds, unpinned.

    >>> prunable(0.1, 31 * 86400, below=0.2, min_idle=30 * 86400)
    True
    >>> prunable(0.1, 31 * 86400, below=0.2, min_idle=30 * 86400, pinned=True)
    False
    """
    return not pinned and weight < below and idle >= min_idle and math.isfinite(weight)
