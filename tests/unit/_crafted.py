"""Crafted save files for the tests: signed rewrites of a saved atlas, deep JSON, a zip bomb, and
the table of crafted records (name, change, the message's fragment) that a load must refuse."""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from shared_core.engine.savefile import VERSION

Change = Callable[[dict[str, Any], dict[str, np.ndarray[Any, Any]]], Any]


def sign(path: Path, members: dict[str, bytes], *, level: int = 6, version: int = VERSION) -> None:
    """Write ``members`` as a save file of format ``version`` with a manifest whose checksums match them."""
    digests = {name: hashlib.sha256(data).hexdigest() for name, data in members.items()}
    manifest = {"format": "elastic-atlas", "version": version, "library": "0", "saved_at": 0.0, "sha256": digests}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=level) as zf:
        zf.writestr("manifest.json", json.dumps(manifest))
        for name, data in members.items():
            zf.writestr(name, data)


def rewrite(path: Path, change: Change, *, version: int = VERSION) -> None:
    """Apply ``change(state, arrays)`` to a saved file and sign it again (as format ``version``)."""
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist() if n != "manifest.json"}
    state = json.loads(members["state.json"])
    arrays = {n: np.load(io.BytesIO(d)) for n, d in members.items() if n.endswith(".npy")}
    change(state, arrays)
    members["state.json"] = json.dumps(state).encode()  # NaN is written as the literal NaN
    for name, array in arrays.items():
        buf = io.BytesIO()
        np.save(buf, array)
        members[name] = buf.getvalue()
    sign(path, members, version=version)


def node(state: dict[str, Any], **change: Any) -> None:
    state["partitions"][1]["nodes"][0].update(change)


def edge(state: dict[str, Any], **change: Any) -> None:
    state["partitions"][1]["edges"][0].update(change)


def nested(depth: int) -> Any:
    value: Any = 1
    for _ in range(depth):
        value = [value]
    return value


def _same_id(state: dict[str, Any]) -> None:
    bob = state["partitions"][0]
    bob["nodes"][0]["id"] = bob["sessions"][0][1][0] = state["partitions"][1]["nodes"][0]["id"]


CRAFTED: list[tuple[str, Change, str]] = [
    ("weight NaN", lambda s, a: node(s, weight=float("nan")), "weight must be a finite number"),
    ("weight -5", lambda s, a: node(s, weight=-5), "weight must be >= 0"),
    ("weight infinite", lambda s, a: node(s, weight=float("inf")), "weight must be a finite number"),
    ("importance NaN", lambda s, a: node(s, importance=float("nan")), "importance"),
    ("timestamp 1e300", lambda s, a: node(s, timestamp=1e300), "timestamp must be a time between"),
    ("created_at -1e20", lambda s, a: node(s, created_at=-1e20), "created_at must be a time between"),
    ("expires_at 1e20", lambda s, a: node(s, expires_at=1e20), "expires_at must be a time between"),
    ("valid_to NaN", lambda s, a: node(s, valid_to=float("nan")), "valid_to"),
    ("empty content", lambda s, a: node(s, content=""), "content must not be empty"),
    ("blank content", lambda s, a: node(s, content="   "), "content must not be empty"),
    ("surrogate content", lambda s, a: node(s, content="x \ud800"), "surrogate"),
    ("unknown kind", lambda s, a: node(s, kind="sorcery"), "unknown kind 'sorcery'"),
    ("working kind in the graph", lambda s, a: node(s, kind="working"), "unknown kind 'working'"),
    ("access_count -1", lambda s, a: node(s, access_count=-1), "access_count must be an int >= 0"),
    ("turn 1.5", lambda s, a: node(s, turn=1.5), "turn must be an int >= 0"),
    ("pinned 'yes'", lambda s, a: node(s, pinned="yes"), "pinned must be True or False"),
    ("empty id", lambda s, a: node(s, id=""), "id must be a non-empty string"),
    ("surrogate session", lambda s, a: node(s, session_id="s\udc80"), "surrogate"),
    ("deep metadata", lambda s, a: node(s, metadata={"k": nested(34)}), "nests deeper than 32"),
    ("surrogate metadata", lambda s, a: node(s, metadata={"k": "\ud800"}), "surrogate"),
    ("metadata not an object", lambda s, a: node(s, metadata=[1]), "metadata must be a mapping"),
    ("edge strength NaN", lambda s, a: edge(s, strength=float("nan")), "strength must be a finite number"),
    ("edge strength -1", lambda s, a: edge(s, strength=-1), "strength must be >= 0"),
    ("edge created_at 1e300", lambda s, a: edge(s, created_at=1e300), "created_at must be a time"),
    ("edge to itself", lambda s, a: edge(s, target=s["partitions"][1]["edges"][0]["source"]), "to itself"),
    ("edge deep metadata", lambda s, a: edge(s, metadata={"k": nested(34)}), "nests deeper than 32"),
    ("edge extra field", lambda s, a: edge(s, colour="red"), "malformed"),
    ("empty namespace", lambda s, a: [n.update(namespace="") for n in s["partitions"][0]["nodes"]]
     and s["partitions"][0].update(namespace=""), "namespace must be a non-empty string"),
    ("same id in two namespaces", lambda s, a: _same_id(s), "same id"),
    ("turn counter -1", lambda s, a: s["partitions"][1].update(turn=-1), "turn counter must be an int >= 0"),
    ("surrogate session order", lambda s, a: s["partitions"][1]["sessions"][0].__setitem__(0, "\ud800"),
     "surrogate"),
    ("event time 1e300", lambda s, a: s["events"]["records"][0].update(at=1e300), "at must be a time"),
    ("event log size 1e12", lambda s, a: s["events"].update(maxlen=10**12), "event log size"),
    ("held turn of kind memory", lambda s, a: s["lifecycle"]["held"][0].update(kind="memory"), "unknown kind"),
    ("held turn weight -1", lambda s, a: s["lifecycle"]["held"][0].update(weight=-1), "weight must be >= 0"),
    ("since_prune -1", lambda s, a: s["lifecycle"].update(since_prune=-1), "since_prune"),
    ("empty keyword text (version 1)", lambda s, a: s["lifecycle"].update(
        indexed={s["partitions"][1]["nodes"][0]["id"]: ""}), "keyword text"),
    ("embedding dimension 10**9", lambda s, a: s["embedder"].update(dim=10**9), "bad embedding dimension"),
    ("config ttl 1e20", lambda s, a: s["config"].update(default_ttl=1e20), "default_ttl"),
    ("deep event data", lambda s, a: s["events"]["records"][0]["data"].update(k=nested(60)), "nests deeper than 40"),
]


def bomb(path: Path, size: int) -> None:
    """A save file whose state.json is ``size`` bytes of spaces (valid JSON padding), deflated
    about 1,000 times; its checksum is valid."""
    digest = hashlib.sha256()
    block = b" " * (1 << 20)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=9) as zf:
        with zf.open("state.json", "w", force_zip64=True) as fh:
            for _ in range(size // len(block)):
                fh.write(block)
                digest.update(block)
        manifest = {"format": "elastic-atlas", "version": 1, "sha256": {"state.json": digest.hexdigest()}}
        zf.writestr("manifest.json", json.dumps(manifest))
