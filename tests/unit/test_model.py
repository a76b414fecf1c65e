"""The generated builders of `shared_core.values.model` against the dataclass they build."""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from shared_core.values.model import MemoryNode, evolve, new_ids, node_of, with_embedding


def test_generated_builders_set_every_field() -> None:
    full = MemoryNode(id="a", content="x", namespace="u", session_id="s", weight=0.7, pinned=True,
                      metadata={"k": 1}, embedding=np.ones(2, dtype=np.float32))
    values = {f.name: getattr(full, f.name) for f in fields(MemoryNode)}
    built = node_of(**values)
    assert all(getattr(built, name) is value for name, value in values.items())
    changed = evolve(full, weight=0.2, session_id="t")
    assert (changed.weight, changed.session_id, full.weight) == (0.2, "t", 0.7)
    assert all(getattr(changed, f.name) is getattr(full, f.name) for f in fields(MemoryNode)
               if f.name not in ("weight", "session_id"))
    bare = with_embedding(full, None)
    assert bare.embedding is None and bare.metadata is full.metadata and bare.pinned
    with pytest.raises(KeyError):
        evolve(full, not_a_field=1)
    with pytest.raises(TypeError):
        node_of(id="a")  # every field is required


def test_new_ids_are_24_url_safe_characters_and_distinct() -> None:
    ids = new_ids(20_000) + new_ids(1) + new_ids(0)
    alphabet = set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert len(ids) == 20_001 == len(set(ids))
    assert all(len(i) == 24 and set(i) <= alphabet for i in ids)
    assert len(set("".join(ids))) == 64  # every character of the alphabet in use: 6 random bits each
