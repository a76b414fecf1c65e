"""`AtlasMemory`: the atlas as ``memory=`` for LangChain's legacy chains."""

from __future__ import annotations

import uuid
from collections import OrderedDict
from typing import Any, Literal

from langchain_classic.base_memory import BaseMemory
from langchain_core.messages import SystemMessage
from pydantic import ConfigDict, Field, PrivateAttr

from shared_core import ElasticMemoryAtlas, InvalidInputError, MemoryNotFoundError
from shared_core.values._arguments import check_arguments

from ._convert import ROLE_KEY, as_text

__all__ = ["AtlasMemory"]

_PENDING_LIMIT = 64  # recalls waiting for their save_context (concurrent runs of one chain)
DEFAULT_TOKEN_BUDGET = 2000  # as LangChain's ConversationTokenBufferMemory; LlamaIndex's AtlasMemory agrees
# Names from the core API or from LlamaIndex that users bring here by habit.
_RENAMES = {"token_limit": "token_budget", "max_tokens": "token_budget"}


class AtlasMemory(BaseMemory):
    """Elastic, budgeted memory for ``ConversationChain`` and ``LLMChain``.

    Before each run, `load_memory_variables` asks the atlas for the context of the current input
    within ``token_budget`` exact tokens: the session's latest turns (working memory) plus the
    memories recalled for the input from anywhere in the namespace, however old. After the run,
    `save_context` stores the user and AI turns as memories (the user turn linked to what was
    recalled for it, the AI turn ``responds_to`` the user turn), so a fact stated at turn 1 is
    still in the prompt at turn 40 when it matters, while a buffer of the same size has lost it.

    Setup:
        Install the LangChain extra (``langchain-classic`` holds the legacy chains).

        ```bash
        pip install ".[langchain]"   # in a checkout of elastic-atlas (not on PyPI)
        ```

    Key init args:
        atlas: ElasticMemoryAtlas
            Where memories live (default: a new atlas with the offline MiniLM embedder).
        namespace: str
            The user or tenant; recall never crosses it.
        session_id: str
            The conversation (default: a new random id); working memory is this session's.
        token_budget: int
            Exact tokens (cl100k_base by default) the memory may add to the prompt (default 2000);
            LangChain's ``max_token_limit`` is accepted for it.
        cross_session: bool | None
            Recall from the namespace's other sessions too (default True, as in the LlamaIndex
            adapter); None follows the atlas config.
        style: "timeline" | "bullet" | "narrative"
            How the context is rendered (default ``"timeline"``).
        memory_key, input_key, output_key, return_messages:
            As in LangChain's buffer memories; ``return_messages=True`` gives the context as one
            ``SystemMessage``.

    Instantiate:
        >>> from shared_core import ElasticMemoryAtlas, HashingEmbedder
        >>> from langchain_atlas import AtlasMemory
        >>> atlas = ElasticMemoryAtlas(embedder=HashingEmbedder())  # omit embedder= for MiniLM
        >>> memory = AtlasMemory(atlas=atlas, namespace="alice", session_id="chat-1", token_budget=200)

    Invoke:
        >>> memory.save_context({"input": "My sister Ingrid lives in Tromsø"}, {"response": "Noted!"})
        >>> history = memory.load_memory_variables({"input": "Where does Ingrid live?"})["history"]
        >>> "Human: My sister Ingrid lives in Tromsø" in history and "AI: Noted!" in history
        True
        >>> atlas.count_tokens(history) <= 200
        True

    Use with a chain (``ConversationChain`` is deprecated upstream but still works):
        ```python
        chain = ConversationChain(llm=llm, memory=AtlasMemory(namespace="alice"))
        ```
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    atlas: ElasticMemoryAtlas = Field(default_factory=ElasticMemoryAtlas, description="Where memories live.")
    namespace: str = Field(min_length=1, description="The user or tenant.")
    session_id: str = Field(default_factory=lambda: uuid.uuid4().hex, min_length=1,
                            description="The conversation; working memory is this session's.")
    token_budget: int = Field(default=DEFAULT_TOKEN_BUDGET, ge=0, description="Exact tokens the context may use.")
    style: Literal["timeline", "bullet", "narrative"] = Field(default="timeline",
                                                             description="How the context is rendered.")
    working_memory: int | None = Field(
        default=None, ge=0, description="Latest turns always included (None: the atlas config).")
    cross_session: bool | None = Field(
        default=True, description="Recall from the namespace's other sessions (None: the atlas config).")
    memory_key: str = Field(default="history", description="Prompt variable the context fills.")
    input_key: str | None = Field(default=None, description="Input holding the user's turn (None: inferred).")
    output_key: str | None = Field(default=None, description="Output holding the AI's turn (None: inferred).")
    return_messages: bool = Field(default=False, description="Return the context as a list of messages.")
    human_prefix: str = Field(default="Human", description="Speaker label of stored user turns.")
    ai_prefix: str = Field(default="AI", description="Speaker label of stored AI turns.")
    link_recalled: int = Field(default=5, ge=0,
                               description="How many recalled memories a new user turn is linked to.")
    clear_mode: Literal["delete", "fade"] = Field(
        default="delete", description="`clear` deletes the session's memories or fades their weights.")

    _pending: OrderedDict[str, list[tuple[str, float]]] = PrivateAttr(default_factory=OrderedDict)

    def __init__(self, **data: Any) -> None:
        if "max_token_limit" in data:  # LangChain's name (ConversationTokenBufferMemory)
            if "token_budget" in data:
                raise InvalidInputError("AtlasMemory got both token_budget= and max_token_limit=; pass one")
            data["token_budget"] = data.pop("max_token_limit")
        check_arguments("AtlasMemory", data, accepted=type(self).model_fields, renames=_RENAMES)
        super().__init__(**data)

    @property
    def memory_variables(self) -> list[str]:
        return [self.memory_key]

    def _input_text(self, inputs: dict[str, Any]) -> str:
        key = self.input_key
        if key is None:  # as LangChain's memories infer it (without importing all of them)
            candidates = sorted(set(inputs) - {*self.memory_variables, "stop"})
            if len(candidates) != 1:
                raise ValueError(f"One input key expected got {candidates}; set input_key")
            key = candidates[0]
        return as_text(inputs[key])

    def _output_text(self, outputs: dict[str, Any]) -> str:
        if self.output_key is not None:
            return as_text(outputs[self.output_key])
        if len(outputs) == 1:
            return as_text(next(iter(outputs.values())))
        if "output" in outputs:
            return as_text(outputs["output"])
        raise ValueError(f"AtlasMemory got several outputs {sorted(outputs)}; set output_key to the one to store")

    def load_memory_variables(self, inputs: dict[str, Any]) -> dict[str, Any]:
        """The budgeted context for the current input: working memory plus recalled memories.

        Recall is for the input's last ``max_query_chars`` characters (the atlas config): a chat
        turn is cut, not refused as `ElasticMemoryAtlas.retrieve` refuses a longer query."""
        query = self._input_text(inputs)[-self.atlas.config.max_query_chars:]
        if not query.strip():
            text = ""
        else:
            ctx = self.atlas.build_context(
                query, namespace=self.namespace, session_id=self.session_id, token_budget=self.token_budget,
                style=self.style, working_memory=self.working_memory, cross_session=self.cross_session)
            recalled = [(m.node.id, m.score) for m in ctx.memories if "working" not in m.paths]
            recalled.sort(key=lambda pair: -pair[1])
            self._pending[query] = recalled[:self.link_recalled]
            while len(self._pending) > _PENDING_LIMIT:
                self._pending.popitem(last=False)
            text = ctx.text
        if self.return_messages:
            return {self.memory_key: [SystemMessage(content=text)] if text else []}
        return {self.memory_key: text}

    def save_context(self, inputs: dict[str, Any], outputs: dict[str, str]) -> None:
        """Store the user and AI turns, linked to the memories recalled for this input."""
        human, ai = self._input_text(inputs), self._output_text(outputs)
        links = [(node_id, "related_to", min(1.0, max(0.05, score)))
                 for node_id, score in self._pending.pop(human, [])]
        items: list[dict[str, Any]] = []
        if human.strip():
            items.append({"content": f"{self.human_prefix}: {human}", "metadata": {ROLE_KEY: "human"},
                          "links_to": links})
        if ai.strip():
            items.append({"content": f"{self.ai_prefix}: {ai}", "metadata": {ROLE_KEY: "ai"}})
        if not items:
            return
        try:
            nodes = self.atlas.add_memories(items, namespace=self.namespace, session_id=self.session_id)
        except MemoryNotFoundError:  # a recalled memory was evicted or forgotten in the meantime
            items[0].pop("links_to", None)
            nodes = self.atlas.add_memories(items, namespace=self.namespace, session_id=self.session_id)
        if len(nodes) == 2:
            self.atlas.link(nodes[1].id, nodes[0].id, relation="responds_to", namespace=self.namespace)

    def clear(self) -> None:
        """End the session: delete its memories (``clear_mode="fade"``: fade them instead)."""
        self._pending.clear()
        self.atlas.end_session(self.session_id, namespace=self.namespace, mode=self.clear_mode)
