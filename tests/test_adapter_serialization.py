"""What can be serialized round-trips; what cannot says so (issue 26, item 4)."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from llama_index.core.base.llms.types import ChatMessage

from langchain_atlas import AtlasChatMessageHistory
from llamaindex_atlas import AtlasMemory
from shared_core import ElasticMemoryAtlas, HashingEmbedder, InvalidInputError


def test_llamaindex_memory_round_trips_through_a_saved_atlas(tmp_path: Path) -> None:
    path = tmp_path / "alice.atlas"
    memory = AtlasMemory(atlas=ElasticMemoryAtlas(), namespace="alice", token_limit=500, atlas_path=str(path))
    memory.put_messages([ChatMessage(role="user", content="I live in Oslo"),
                         ChatMessage(role="assistant", content="Noted.")])
    data = memory.to_dict()
    assert path.exists() and data["atlas_path"] == str(path)
    again = AtlasMemory.from_dict(data)
    assert again.atlas is not memory.atlas
    assert (again.namespace, again.session_id, again.token_limit) == ("alice", memory.session_id, 500)
    assert again.get_all() == memory.get_all()
    assert AtlasMemory.from_json(memory.to_json()).get_all() == memory.get_all()


def test_llamaindex_memory_from_dict_without_an_atlas_is_an_error() -> None:
    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
    memory = AtlasMemory(atlas=atlas, namespace="alice")
    memory.put(ChatMessage(role="user", content="I live in Oslo"))
    with pytest.raises(InvalidInputError, match="holds no atlas"):
        AtlasMemory.from_dict(memory.to_dict())
    with pytest.raises(InvalidInputError, match="no saved atlas"):
        AtlasMemory.from_dict({**memory.to_dict(), "atlas_path": "/nonexistent/a.atlas"})
    same = AtlasMemory.from_dict(memory.to_dict(), atlas=atlas)  # the atlas given explicitly
    assert same.atlas is atlas and same.get_all() == memory.get_all()


def test_pickling_a_chat_history_is_a_clear_error() -> None:
    history = AtlasChatMessageHistory(atlas=ElasticMemoryAtlas(embedder=HashingEmbedder()), namespace="a",
                                      session_id="s")
    with pytest.raises(TypeError, match=r"cannot be pickled.*atlas\.save"):
        pickle.dumps(history)


def test_an_empty_user_message_is_not_stored() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())
    history = AtlasChatMessageHistory(atlas=atlas, namespace="a", session_id="s")
    history.add_messages([HumanMessage(""), HumanMessage("  "), HumanMessage("hi"), AIMessage("hello")])
    assert [m.content for m in history.messages] == ["hi", "hello"]
    memory = AtlasMemory(atlas=atlas, namespace="b")
    memory.put(ChatMessage(role="user", content=""))
    memory.put_messages([ChatMessage(role="user", content=" "), ChatMessage(role="user", content="hi")])
    assert [m.content for m in memory.get_all()] == ["hi"]
    assert [n.content for n in atlas.memories(namespace="b")] == ["hi"]
