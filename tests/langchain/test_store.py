"""AtlasStore beyond the contract: namespace mapping, the atlas underneath, and LangGraph graphs."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any, TypedDict

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import InjectedStore, ToolNode, tools_condition
from langgraph.runtime import Runtime
from langgraph.store.base import BaseStore, GetOp, PutOp

from langchain_atlas import AtlasRetriever, AtlasStore
from shared_core import ElasticMemoryAtlas, InvalidInputError, ManualClock

from ._fakes import HashingEmbeddings, ScriptedChatModel


def test_langgraph_namespaces_are_atlas_namespaces(atlas: ElasticMemoryAtlas) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("memories", "alice"), "m1", {"text": "Alice likes tea"})
    assert atlas.namespaces() == ["memories.alice"]
    (node,) = atlas.memories(namespace="memories.alice")
    assert node.metadata["text"] == "Alice likes tea" and node.metadata["langgraph.key"] == "m1"
    # ... so the other adapters reach the same memories
    docs = AtlasRetriever(atlas=atlas, namespace="memories.alice").invoke("tea")
    assert docs[0].metadata["text"] == "Alice likes tea"


def test_a_root_namespace_keeps_stores_apart(atlas: ElasticMemoryAtlas) -> None:
    app, other = AtlasStore(atlas=atlas, namespace="app"), AtlasStore(atlas=atlas, namespace="other.v1")
    app.put(("users", "alice"), "k", {"text": "from app"})
    other.put(("users", "alice"), "k", {"text": "from other"})
    assert sorted(atlas.namespaces()) == ["app.users.alice", "other.v1.users.alice"]
    assert app.get(("users", "alice"), "k").value == {"text": "from app"}  # type: ignore[union-attr]
    assert other.list_namespaces() == [("users", "alice")]
    assert [i.value["text"] for i in app.search((), query="from")] == ["from app"]
    with pytest.raises(InvalidInputError):
        AtlasStore(atlas=atlas, namespace="bad..root")


def test_memories_written_by_other_means_are_items(atlas: ElasticMemoryAtlas) -> None:
    node = atlas.add_memory("Alice moved to Bergen", namespace="memories.alice", metadata={"type": "fact"})
    store = AtlasStore(atlas=atlas)
    item = store.get(("memories", "alice"), node.id)
    assert item is not None and item.value == {"content": "Alice moved to Bergen", "type": "fact"}
    assert [i.key for i in store.search(("memories",), filter={"type": "fact"})] == [node.id]
    store.delete(("memories", "alice"), node.id)
    assert atlas.count(namespace="memories.alice") == 0


def test_a_new_store_reopens_a_shared_atlas(atlas: ElasticMemoryAtlas) -> None:
    AtlasStore(atlas=atlas).put(("a",), "k", {"text": "v1"})
    reopened = AtlasStore(atlas=atlas)
    assert reopened.get(("a",), "k").value == {"text": "v1"}  # type: ignore[union-attr]
    reopened.put(("a",), "k", {"text": "v2"})
    assert atlas.count(namespace="a") == 1  # replaced, not duplicated


def test_overwrite_keeps_created_at_and_one_memory(atlas: ElasticMemoryAtlas, clock: ManualClock) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("a",), "k", {"text": "first"})
    clock.advance(hours=1)
    store.put(("a",), "k", {"text": "second"})
    item = store.get(("a",), "k")
    assert item is not None
    assert (item.updated_at - item.created_at).total_seconds() == 3600
    assert [m.content for m in atlas.memories(namespace="a")] == ['{"text": "second"}']


def test_fields_choose_the_text_that_is_embedded(atlas: ElasticMemoryAtlas) -> None:
    store = AtlasStore(atlas=atlas, fields=["title", "tags[*]"])
    store.put(("n",), "k", {"title": "Fjord trip", "tags": ["hiking", "boat"], "body": "long text"})
    store.put(("n",), "j", {"title": "ignored", "body": "Budget review"}, index=["body"])
    store.put(("n",), "x", {"title": "hidden"}, index=False)
    assert [m.content for m in atlas.memories(namespace="n")] == ["Fjord trip\nhiking\nboat", "Budget review", "x"]


def test_consecutive_puts_share_one_embedding_call(clock: ManualClock) -> None:
    embeddings = HashingEmbeddings()
    atlas = ElasticMemoryAtlas(embedder=embeddings, clock=clock)
    store = AtlasStore(atlas=atlas, fields=["text"])
    assert atlas.embedder.dim == 256  # the adapter probes the dimension once
    before = embeddings.calls
    store.batch([PutOp(("a",), f"k{i}", {"text": f"item {i}"}) for i in range(5)])
    assert embeddings.calls == before + 1
    assert len(store.search(("a",))) == 5


def test_batch_ops_apply_in_order(atlas: ElasticMemoryAtlas) -> None:
    store = AtlasStore(atlas=atlas)
    results = store.batch([PutOp(("a",), "x", {"text": "1"}), GetOp(("a",), "x"), PutOp(("a",), "x", None),
                           GetOp(("a",), "x"), PutOp(("a",), "x", {"text": "2"}), PutOp(("a",), "x", {"text": "3"})])
    assert results[0] is None and results[1] is not None and results[1].value == {"text": "1"}  # type: ignore[union-attr]
    assert results[3] is None
    assert store.get(("a",), "x").value == {"text": "3"}  # type: ignore[union-attr]
    assert atlas.count(namespace="a") == 1


def test_search_reinforces_unless_told_not_to(atlas: ElasticMemoryAtlas) -> None:
    AtlasStore(atlas=atlas).put(("a",), "k", {"text": "reinforce me"})
    AtlasStore(atlas=atlas, reinforce=False).search(("a",), query="reinforce")
    (node,) = atlas.memories(namespace="a")
    assert node.access_count == 0
    AtlasStore(atlas=atlas).search(("a",), query="reinforce")
    assert atlas.memories(namespace="a")[0].access_count == 1


def test_evicted_items_vanish_cleanly(make_atlas: Callable[..., ElasticMemoryAtlas]) -> None:
    atlas = make_atlas(max_nodes=4)
    store = AtlasStore(atlas=atlas)
    for i in range(12):
        store.put(("a",), f"k{i}", {"text": f"item number {i}"})
    present = [i for i in range(12) if store.get(("a",), f"k{i}") is not None]
    assert 0 < len(present) <= 4 and 11 in present
    assert sorted(int(i.key[1:]) for i in store.search(("a",), limit=20)) == present


@pytest.mark.parametrize(("value", "message"), [({"langgraph.key": "x"}, "reserved")])
def test_reserved_value_keys(atlas: ElasticMemoryAtlas, value: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        AtlasStore(atlas=atlas).put(("a",), "k", value)


@pytest.mark.parametrize("bad", [{"meta": {"author": "x"}}, {"n": {"$in": [1]}}, {"$or": []}])
def test_unsupported_filters_fail_loudly(atlas: ElasticMemoryAtlas, bad: dict[str, Any]) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("a",), "k", {"text": "v"})
    with pytest.raises(InvalidInputError):
        store.search(("a",), filter=bad)


def test_empty_keys_empty_values_and_long_texts(atlas: ElasticMemoryAtlas) -> None:
    store = AtlasStore(atlas=atlas)
    store.put(("a",), "", {})
    assert store.get(("a",), "").value == {}  # type: ignore[union-attr]
    long = {"text": "fjord " * 40_000}  # 240k characters: more than one memory's text may hold
    store.put(("a",), "long", long, index=["text"])
    assert store.get(("a",), "long").value == long  # type: ignore[union-attr]
    assert store.search(("a",), query="fjord", limit=1)[0].key == "long"


# -- LangGraph ----------------------------------------------------------------------------------
class NoteState(TypedDict, total=False):
    user: str
    fact: str
    question: str
    found: list[str]


def _notes_graph(store: BaseStore) -> Any:
    def remember(state: NoteState, runtime: Runtime[None]) -> NoteState:
        assert runtime.store is not None
        if state.get("fact"):
            runtime.store.put(("memories", state["user"]), uuid.uuid4().hex, {"text": state["fact"]})
        return {}

    def recall(state: NoteState, runtime: Runtime[None]) -> NoteState:
        assert runtime.store is not None
        if not state.get("question"):
            return {"found": []}
        hits = runtime.store.search(("memories", state["user"]), query=state["question"], limit=1)
        return {"found": [hit.value["text"] for hit in hits]}

    builder = StateGraph(NoteState)
    builder.add_node("remember", remember)
    builder.add_node("recall", recall)
    builder.add_edge(START, "remember")
    builder.add_edge("remember", "recall")
    builder.add_edge("recall", END)
    return builder.compile(store=store)


def test_a_compiled_graph_writes_and_searches_through_the_store(atlas: ElasticMemoryAtlas) -> None:
    graph = _notes_graph(AtlasStore(atlas=atlas, fields=["text"]))
    for fact in ("I am vegetarian", "My bike is a blue gravel bike", "I work night shifts at the hospital"):
        graph.invoke({"user": "alice", "fact": fact})
    graph.invoke({"user": "bob", "fact": "I eat anything, but mostly steak"})
    assert graph.invoke({"user": "alice", "question": "is my bike blue?"})["found"] == [
        "My bike is a blue gravel bike"]
    assert graph.invoke({"user": "bob", "question": "what do I eat?"})["found"] == ["I eat anything, but mostly steak"]
    assert sorted(atlas.namespaces()) == ["memories.alice", "memories.bob"]


async def test_a_compiled_graph_runs_async_against_the_store(atlas: ElasticMemoryAtlas) -> None:
    graph = _notes_graph(AtlasStore(atlas=atlas, fields=["text"]))
    await graph.ainvoke({"user": "carol", "fact": "Carol speaks Portuguese"})
    out = await graph.ainvoke({"user": "carol", "question": "which language does Carol speak?"})
    assert out["found"] == ["Carol speaks Portuguese"]


@tool
def save_memory(text: str, config: RunnableConfig, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Save a fact about the user for later conversations."""
    store.put(("memories", config["configurable"]["user_id"]), uuid.uuid4().hex, {"text": text})
    return "saved"


@tool
def search_memory(query: str, config: RunnableConfig, store: Annotated[BaseStore, InjectedStore()]) -> str:
    """Search what is known about the user."""
    hits = store.search(("memories", config["configurable"]["user_id"]), query=query, limit=2)
    return "\n".join(hit.value["text"] for hit in hits) or "nothing found"


def _agent_policy(messages: list[BaseMessage]) -> AIMessage:
    last = messages[-1]
    if isinstance(last, ToolMessage):
        return AIMessage(f"Done: {last.text}")
    text = last.text
    if text.startswith("Remember "):
        return AIMessage("", tool_calls=[{"name": "save_memory", "args": {"text": text[9:]}, "id": "c1"}])
    return AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": text}, "id": "c2"}])


def test_an_agent_with_store_tools_saves_and_searches_long_term_memory(atlas: ElasticMemoryAtlas) -> None:
    tools = [save_memory, search_memory]
    model = ScriptedChatModel(policy=_agent_policy).bind_tools(tools)

    def agent(state: MessagesState) -> dict[str, list[BaseMessage]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile(store=AtlasStore(atlas=atlas, fields=["text"]))
    alice = {"configurable": {"user_id": "alice"}}

    graph.invoke({"messages": [HumanMessage("Remember I am allergic to peanuts")]}, alice)
    graph.invoke({"messages": [HumanMessage("Remember my dog is called Pixel")]}, alice)
    out = graph.invoke({"messages": [HumanMessage("what is my dog called?")]}, alice)  # a new thread
    assert out["messages"][-1].text.startswith("Done: my dog is called Pixel")
    other = graph.invoke({"messages": [HumanMessage("what is my dog called?")]}, {"configurable": {"user_id": "bob"}})
    assert other["messages"][-1].text == "Done: nothing found"
    assert model.bound_tools == ["save_memory", "search_memory"]

